#!/usr/bin/env bash
# kernel5 helper, run 6: the committed code (v33 with the block loop's body included twice
# instead of a lambda: decode kernel SASS identical to run 4's, fused kernel as in main):
# CUDA and C API GPU tests, decode A/B against main (three rounds), full benchmark (fused
# rows) of both twice, memcheck and racecheck.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/run6; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
mkdir -p /work/wt/kernel5/build/cli && cp $D/final/df11 /work/wt/kernel5/build/cli/df11
timeout 120 $D/final/df11_capi_gpu_tests > $W/capi_gpu_tests.log 2>&1; echo "capi gpu tests rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) " $W/capi_gpu_tests.log
for round in 1 2 3; do
  for v in main final; do
    timeout 60 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 --no-gemv > $W/dec_${v}_$round.log 2>&1
  done
done
for f in $W/dec_*.log; do echo "== $(basename $f): $(grep -E '^decode \(one launch\)' $f | cut -c28-90) $(grep -c 'bit-exact' $f)"; done
for v in main final main final; do
  timeout 100 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 32 > $W/full_$v.$SECONDS.log 2>&1; echo "full $v rc=$?"
done
for f in $W/full_*.log; do echo "== $(basename $f)"; grep -E '^decode \(|^  all blocks|^ +[0-9]+ +0\.|^ +16 +|fused, one launch' $f | cut -c1-100; done
echo "t=$SECONDS"
bash $D/session.sh $D/final $W/session tests memcheck racecheck > $W/session_summary.txt 2>&1; cat $W/session_summary.txt
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" $W/session/*.log
echo "t=$SECONDS"
(cd $OUT && tar czf run6.tgz run6 && rm -rf run6)
