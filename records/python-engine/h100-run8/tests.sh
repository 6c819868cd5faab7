#!/usr/bin/env bash
# Lead device run 8, call 2 (H100): the C++ GPU suites (rows decode included), memcheck on the
# rows, exec and graph tests and on a generate call through the package, and the GPU pytest.
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
out=${OUT:-/tmp/out}; mkdir -p "$out"
t0=$SECONDS
[ -d /tmp/site/df11 ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
  wheel/*.whl whl/*.whl > "$out/pip.log" 2>&1
export LD_LIBRARY_PATH=$here/lib:/tmp/site/df11/lib:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 DF11_CLI=$here/bin/df11
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
declare -A res
step() { local name=$1 limit=$2; shift 2; local s=$SECONDS
  timeout "$limit" "$@" > "$out/$name.log" 2>&1; local rc=$?
  res[$name]="rc=$rc $((SECONDS-s))s $(grep -E '^\[  (PASSED|FAILED)  \]|passed|failed|ERROR SUMMARY|tokens equal' "$out/$name.log" | tail -n 3 | tr '\n' ' ')"
  echo "$name: ${res[$name]} (at $((SECONDS-t0))s)"; }
step cuda_tests 90 bin/df11_cuda_tests
step capi_gpu_tests 30 bin/df11_capi_gpu_tests
step memcheck_cuda 90 compute-sanitizer --tool memcheck --error-exitcode 9 bin/df11_cuda_tests \
  --gtest_filter='CudaRows*:CudaExec*:CudaGraphDecode*'
step memcheck_generate 120 compute-sanitizer --tool memcheck --error-exitcode 9 python3 ../../python/tests/gpu/memcheck_generate.py
step pytest_gpu 220 bash -c "cd ../../python/tests && python3 -m pytest -q -p no:cacheprovider -rs gpu/test_gpu.py gpu/test_compress_gpu.py -k 'not two_gpus'"
echo "==== $(cat "$out/gpu.txt")"
for k in cuda_tests capi_gpu_tests memcheck_cuda memcheck_generate pytest_gpu; do echo "$k: ${res[$k]:-not run}"; done | tee "$out/summary.txt"
grep -E "FAILED|Error" "$out/pytest_gpu.log" | head -10
