#!/usr/bin/env bash
# h19b device run 5 (one call): the GPU checks and benchmark rows of this branch, from the carry
# folder (.carry/h19b): the wheel, the df11 tool and the C++ GPU tests built here for sm_90, the
# dfloat11 wheels, python/tests and the interop fixtures. Logs under $OUT; a short table last.
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
final=${OUT:-/tmp/out}; mkdir -p "$final"
out=/tmp/run5; rm -rf "$out"; mkdir -p "$out"  # many logs: packed into one file at the end
trap 'tar czf "$final/run5-logs.tgz" -C "$out" . 2>/dev/null; cp "$out"/bench.json "$out"/diag.json "$final"/ 2>/dev/null' EXIT
t0=$SECONDS
export LD_LIBRARY_PATH=$here/lib:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site wheel/*.whl \
  whl/dfloat11-*.whl whl/dahuffman-*.whl > "$out/pip.log" 2>&1 || { cat "$out/pip.log"; exit 3; }
export PYTHONPATH=/tmp/site DF11_CLI=$here/bin/df11 PYTHONUNBUFFERED=1
# The C API GPU test finds the df11 tool under the build directory it was compiled in.
mkdir -p /work/wt/h19b/build-gpu/cli && ln -sf "$here/bin/df11" /work/wt/h19b/build-gpu/cli/df11
export DF11_CUDA_TESTS=$here/bin/df11_cuda_tests DF11_CAPI_GPU_TESTS=$here/bin/df11_capi_gpu_tests
export CUDA_TESTS_FILTER='CudaGraphDecode.*:CudaDecode.TailPool*:CudaDecode.Double*:CudaDecode.Earlier*:CApiGpu.*'
export PYTEST_K='exec_mode or cuda_graph or hostile or corrupt_stream or (df11_folder_cuda and (llama or qwen2))'
export CUDATESTS_TIMEOUT=50 PYTEST_TIMEOUT=80 MAKE_TIMEOUT=70 DIAG_TIMEOUT=90 DIAG_ARGS='--tokens 16'
export BENCH_TIMEOUT=180 HOOK_TIMEOUT=25
export BENCH_ARGS='--batch 1,8 --tokens 256 --compare bf16,dfloat11:eager,df11-exec:graph'
export BENCH_EXTRA='--repeat 3 --eager-tokens 16 --graph-batch 1'
step() {  # one run_gpu.sh step; the logs so far packed after each (a cut-off run keeps them)
  local s=$1 t=$SECONDS
  bash python/tests/gpu/run_gpu.sh "$out" "$s" > "$out/step-$s.txt" 2>&1
  echo "$s rc=$? $((SECONDS-t))s (at $((SECONDS-t0))s)" | tee -a "$out/steps.txt" "$final/steps.txt"
  tar czf "$final/run5-logs.tgz" -C "$out" . 2>/dev/null
}
step cudatests
step pytest
step make8b
step diag
step bench
step hook
{
echo "==== summary (GPU: $(head -1 "$out/gpu.txt"))"
cat "$out/steps.txt"
grep -E '^\[  (PASSED|FAILED) |^\[  FAILED' "$out/cudatests.log" | head -8
tail -n 3 "$out/pytest.log"
grep -E '^diag: ' "$out/diag.log" | head -24
grep -E 'align:.*offsets \[' "$out/diag.log" | head -5
grep -E -A16 '^GPU: ' "$out/bench.log"
grep -E 'hook overhead' "$out/hook.log"
} 2>&1 | tee "$final/summary.txt"
