#!/usr/bin/env bash
# h19e: rows decode of the input embedding. C++ GPU tests (rows + decode + graph), memcheck on
# the rows tests, C API, and the GPU pytest checks that go through the embedding. Table last.
set -uo pipefail
cd "$(dirname "$0")"; here=$PWD
out=${OUT:-/tmp/out}; mkdir -p "$out"; t0=$SECONDS
export LD_LIBRARY_PATH=$here/lib PYTHONUNBUFFERED=1 DF11_LIBRARY_DIR=$here/lib DF11_CLI=$here/bin/df11 PYTHONPATH=$here/python
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
declare -A res
[ -e tests ] || ln -s "$here/../../tests" tests  # tests/interop/fixtures (models.FIXTURES)
step() { local name=$1 limit=$2; shift 2; local s=$SECONDS
  timeout "$limit" "$@" > "$out/$name.log" 2>&1; local rc=$?
  res[$name]="rc=$rc $((SECONDS-s))s $(grep -E '^\[  (PASSED|FAILED)  \]|passed|failed|ERROR SUMMARY' "$out/$name.log" | tail -n 3 | tr '\n' ' ')"
  echo "$name: ${res[$name]} (at $((SECONDS-t0))s)"; }
[ -n "${SKIP_CPP:-}" ] || step cuda_tests 60 bin/df11_cuda_tests --gtest_filter='CudaRows*:CudaDecode*'
[ -n "${SKIP_CPP:-}" ] || step memcheck_rows 40 compute-sanitizer --tool memcheck --error-exitcode 9 bin/df11_cuda_tests --gtest_filter='CudaRows*'
[ -n "${SKIP_CPP:-}" ] || step capi 20 bin/df11_capi_gpu_tests
step pytest_gpu 170 bash -c "cd python/tests && python3 -m pytest -q -p no:cacheprovider -rs gpu/test_gpu.py -k '${PYTEST_K:-embedding_rows or df11_folder_cuda or official_folder_cuda or graph_tokens or reduce_overhead}'"
echo "==== $(cat "$out/gpu.txt")"
for k in cuda_tests memcheck_rows capi pytest_gpu; do echo "$k: ${res[$k]:-not run}"; done | tee "$out/summary.txt"
