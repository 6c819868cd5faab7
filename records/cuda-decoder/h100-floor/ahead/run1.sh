#!/usr/bin/env bash
# ahead run 1 (g9: the next block's chunks found during step 6 by the last warp): CUDA tests
# and C API GPU tests on g9, then an interleaved A/B against main (61b3de5) of the GEMV rows,
# then memcheck and racecheck of the GEMV tests.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/run1; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
mkdir -p /work/main/build/cli && cp $D/new/df11 /work/main/build/cli/df11
timeout 90 $D/new/df11_cuda_tests > $W/cuda_tests.log 2>&1; echo "cuda tests rc=$?"; grep -E '^\[  (PASSED|FAILED) ' $W/cuda_tests.log
timeout 120 $D/new/df11_capi_gpu_tests > $W/capi_gpu_tests.log 2>&1; echo "capi gpu tests rc=$?"; grep -E '^\[  (PASSED|FAILED) ' $W/capi_gpu_tests.log
for r in 1 2 3; do
  for v in main new; do
    timeout 120 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 > $W/gemv_${v}_$r.log 2>&1
  done
done
for f in $W/gemv_*.log; do echo "== $(basename $f): $(grep -E '^decode \(one launch\)' $f | cut -c28-60)"; grep -E '^\s+(1|2|4|8|16)\s' $f | awk '{print "   ", $1, $2, $4, $6}'; done
bash $D/session.sh $D/new $W/session memcheck racecheck > $W/session_summary.txt 2>&1; cat $W/session_summary.txt
(cd $OUT && tar czf run1.tgz run1 && rm -rf run1)
