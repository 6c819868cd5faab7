#!/usr/bin/env bash
# kernel5 helper, run 2: where v31's static-path cost (+3% at pool 0 in run 1) comes from.
# v31 (run 1's binary), v2 (take decided after the scan, not before the decode loop), v3
# (v2 + the take in a non-inlined function: no register holds the atomic's result), v4 (v3 +
# b = next at the loop end), each with the pool (40%, runs of 2) and without (0), against
# main's v24, interleaved rounds; SASS of the decode kernels for offline comparison; tests.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/run2; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
for v in main v31 v2 v3 v4; do
  cuobjdump -sass $D/$v/df11-cuda-bench 2>/dev/null | awk '/Function : .*decode_kernelILj1ELb0/{p=1} p&&/Function : /&&!/decode_kernelILj1ELb0/{p=0} p' > $W/sass_$v.txt
  echo "sass $v: $(wc -l < $W/sass_$v.txt) lines"
done
dec() { # name bin percent chunk
  DF11_POOL_PERCENT=$3 DF11_POOL_CHUNK=$4 timeout 60 $D/$2/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 --no-gemv > $W/dec_$1.log 2>&1
}
for round in 1 2 3; do
  dec main_$round main 40 2
  for v in v31 v2 v3 v4; do
    dec ${v}p40_$round $v 40 2
    dec ${v}p0_$round $v 0 2
  done
done
for f in $W/dec_*.log; do echo "== $(basename $f): $(grep -E '^decode \(one launch\)' $f | cut -c28-90) $(grep -c 'bit-exact' $f)"; done
echo "t=$SECONDS"
for v in v2 v3 v4; do
  timeout 90 $D/$v/df11_cuda_tests > $W/tests_$v.log 2>&1; echo "tests $v rc=$?"
  grep -E "^\[  (PASSED|FAILED) " $W/tests_$v.log | head -3
done
echo "t=$SECONDS"
(cd $OUT && tar czf run2.tgz run2 && rm -rf run2)
