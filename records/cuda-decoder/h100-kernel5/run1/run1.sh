#!/usr/bin/env bash
# kernel5 helper, run 1: decode v31 (tail pool through the workspace; pool share and run
# length from DF11_POOL_PERCENT / DF11_POOL_CHUNK in this diagnostic build) against main's
# v24 binary, interleaved rounds; the CUDA tests of v31; a traced build (trace/) at the
# default pool (40%, runs of 2) and without a pool; 32 blocks in one launch; fused A/B.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/run1; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
timeout 90 $D/v31/df11_cuda_tests > $W/tests_v31.log 2>&1; echo "tests v31 rc=$?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $W/tests_v31.log | head
dec() { # name bin percent chunk
  DF11_POOL_PERCENT=$3 DF11_POOL_CHUNK=$4 timeout 60 $D/$2/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 --no-gemv > $W/dec_$1.log 2>&1
}
for round in 1 2 3; do
  dec main_$round main 40 2
  dec p40k2_$round v31 40 2
  dec p0_$round v31 0 2
  dec p25k2_$round v31 25 2
  dec p55k2_$round v31 55 2
  dec p40k4_$round v31 40 4
  dec p70k2_$round v31 70 2
done
for f in $W/dec_*.log; do echo "== $(basename $f): $(grep -E '^decode \(one launch\)' $f | cut -c28-90) $(grep -c 'bit-exact' $f)"; done
echo "t=$SECONDS"
for v in 40:2 0:2 55:2; do
  DF11_TRACE=$W/trace_${v/:/k}.txt DF11_POOL_PERCENT=${v%%:*} DF11_POOL_CHUNK=${v#*:} timeout 60 $D/trace/df11-cuda-bench --runs 4 --warmup 1 --model-blocks 0 --no-gemv > $W/dec_trace_${v/:/k}.log 2>&1; echo "trace $v rc=$?"
done
echo "t=$SECONDS"
for v in main v31 main v31; do
  [ $SECONDS -lt 440 ] || break
  timeout 100 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 32 > $W/full_$v.$SECONDS.log 2>&1; echo "full $v rc=$?"
done
for f in $W/full_*.log; do echo "== $(basename $f)"; grep -E '^decode \(|^  all blocks|^ +1 +0\.|^ +8 +0\.|fused, one launch ' $f | cut -c1-110; done
echo "t=$SECONDS"
(cd $OUT && tar czf run1.tgz run1 && rm -rf run1)
