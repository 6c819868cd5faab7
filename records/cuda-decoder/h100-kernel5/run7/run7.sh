#!/usr/bin/env bash
# kernel5 helper, run 7: the committed code rebased on main (main's new commits touch the CPU
# decoder and xxh3, not the CUDA code): CUDA tests, C API GPU tests, initcheck, one decode A/B.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/run7; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
mkdir -p /work/wt/kernel5/build/cli && cp $D/final/df11 /work/wt/kernel5/build/cli/df11
timeout 120 $D/final/df11_capi_gpu_tests > $W/capi_gpu_tests.log 2>&1; echo "capi gpu tests rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) " $W/capi_gpu_tests.log
bash $D/session.sh $D/final $W/session tests initcheck > $W/session_summary.txt 2>&1; cat $W/session_summary.txt
for v in main final main final; do
  timeout 60 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 --no-gemv > $W/dec_${v}_$SECONDS.log 2>&1
done
for f in $W/dec_*.log; do echo "== $(basename $f): $(grep -E '^decode \(one launch\)' $f | cut -c28-90) $(grep -c 'bit-exact' $f)"; done
(cd $OUT && tar czf run7.tgz run7 && rm -rf run7)
