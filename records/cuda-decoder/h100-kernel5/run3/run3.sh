#!/usr/bin/env bash
# kernel5 helper, run 3: v32 (the pool runs through a second copy of the block loop: lookup
# loop back to 13 SASS instructions; take in a non-inlined function, 12 bytes of spill), v33
# (v32 with the take inlined: no spill, the atomic issued just before the second barrier), v34
# (v33 with the atomic issued after the scan barrier) against main and run 1's v31;
# pool shares for v34; traced v32; tests; 32 blocks + fused A/B.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/run3; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
for v in v33 v34; do
  timeout 90 $D/$v/df11_cuda_tests > $W/tests_$v.log 2>&1; echo "tests $v rc=$?"
  grep -E "^\[  (PASSED|FAILED) " $W/tests_$v.log | head -3
done
dec() { # name bin percent chunk
  DF11_POOL_PERCENT=$3 DF11_POOL_CHUNK=$4 timeout 60 $D/$2/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 --no-gemv > $W/dec_$1.log 2>&1
}
for round in 1 2 3; do
  dec main_$round main 40 2
  dec v31p40_$round v31 40 2
  dec v32p40_$round v32 40 2
  dec v33p40_$round v33 40 2
  dec v34p40_$round v34 40 2
  dec v34p0_$round v34 0 2
  dec v34p55_$round v34 55 2
  dec v34p25_$round v34 25 2
  dec v34p40k3_$round v34 40 3
done
for f in $W/dec_*.log; do echo "== $(basename $f): $(grep -E '^decode \(one launch\)' $f | cut -c28-90) $(grep -c 'bit-exact' $f)"; done
echo "t=$SECONDS"
DF11_TRACE=$W/trace_v32_40k2.txt DF11_POOL_PERCENT=40 DF11_POOL_CHUNK=2 timeout 60 $D/trace32/df11-cuda-bench --runs 4 --warmup 1 --model-blocks 0 --no-gemv > $W/dec_trace_v32.log 2>&1; echo "trace rc=$?"
for v in main v34 main v34; do
  [ $SECONDS -lt 440 ] || break
  timeout 100 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 32 > $W/full_$v.$SECONDS.log 2>&1; echo "full $v rc=$?"
done
for f in $W/full_*.log; do echo "== $(basename $f)"; grep -E '^decode \(|^  all blocks|^ +1 +0\.|^ +8 +0\.|fused, one launch ' $f | cut -c1-110; done
echo "t=$SECONDS"
(cd $OUT && tar czf run3.tgz run3 && rm -rf run3)
