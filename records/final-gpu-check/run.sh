#!/usr/bin/env bash
# Final GPU check of main at the end of the session: the C++ GPU suites, memcheck on the
# execution-layout and graph tests, and a GPU pytest subset. Logs under $OUT; a table last.
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
out=${OUT:-/tmp/out}; mkdir -p "$out"
t0=$SECONDS
export LD_LIBRARY_PATH=$here/lib PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
declare -A res
step() { local name=$1 limit=$2; shift 2
  local s=$SECONDS
  timeout "$limit" "$@" > "$out/$name.log" 2>&1; local rc=$?
  res[$name]="rc=$rc $((SECONDS-s))s $(grep -E '^\[  (PASSED|FAILED)  \]|passed|failed|ERROR SUMMARY' "$out/$name.log" | tail -n 3 | tr '\n' ' ')"
  echo "$name: ${res[$name]} (at $((SECONDS-t0))s)"; }
step cuda_tests 70 bin/df11_cuda_tests
step capi_gpu_tests 30 bin/df11_capi_gpu_tests
step memcheck_exec 45 compute-sanitizer --tool memcheck --error-exitcode 9 bin/df11_cuda_tests \
  --gtest_filter='CudaExec*:CudaGraphDecode*'
step memcheck_capi 25 compute-sanitizer --tool memcheck --error-exitcode 9 bin/df11_capi_gpu_tests \
  --gtest_filter='CApiGpu.Exec*'
if python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site wheel/*.whl \
    > "$out/pip.log" 2>&1; then
  export PYTHONPATH=/tmp/site DF11_CLI=$here/bin/df11
  step pytest_gpu 50 bash -c "cd ../../python/tests && python3 -m pytest -q -p no:cacheprovider -rs -x gpu/test_compress_gpu.py gpu/test_gpu.py -k 'exec or graph or compress or hostile or corrupt or llama'"
else
  res[pytest_gpu]="wheel install failed"
fi
echo "==== $(cat "$out/gpu.txt")"
for k in cuda_tests capi_gpu_tests memcheck_exec memcheck_capi pytest_gpu; do echo "$k: ${res[$k]:-not run}"; done | tee "$out/summary.txt"
