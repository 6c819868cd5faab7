#!/usr/bin/env bash
# kernel3 helper, run 7: the C API GPU tests (fused GEMV through libdf11.so, corrupt device
# copies through both status paths) on the branch's final code, and memcheck of them.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/k3g; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
# df11_capi_gpu_tests run `df11 compress` from the build path they were built in.
mkdir -p /work/wt/kernel3/build/cli && cp $D/capi/df11 /work/wt/kernel3/build/cli/df11
timeout 120 $D/capi/df11_capi_gpu_tests > $W/capi_gpu_tests.log 2>&1; echo "capi gpu tests rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) " $W/capi_gpu_tests.log
timeout 300 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 $D/capi/df11_capi_gpu_tests > $W/capi_gpu_memcheck.log 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|PASSED|FAILED" $W/capi_gpu_memcheck.log
(cd $OUT && tar czf k3run7.tgz k3g && rm -rf k3g)
