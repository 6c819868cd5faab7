#!/bin/bash
# Every GPU check of the df11 package in one go, on a machine with a CUDA GPU (one or two: the
# device_map test needs two), with df11 installed (pip install . from the checkout, or the
# wheel: pip install --no-deps df11-*.whl) and the df11 tool at $DF11_CLI (build/cli/df11).
#
#   python/tests/gpu/run_gpu.sh OUT [cudatests|pytest|make8b|diag|bench|compile|hook|memcheck]...
#   (default: pytest)
#
#   cudatests the C++ GPU tests at $DF11_CUDA_TESTS and $DF11_CAPI_GPU_TESTS (built binaries;
#             $CUDA_TESTS_FILTER picks gtest cases) -> OUT/cudatests.log
#   pytest    python/tests (CPU and GPU checks; $PYTEST_K: a pytest -k expression)
#             -> OUT/pytest.log
#   make8b    the Llama-3.1-8B-shaped model (random weights) made in /dev/shm and compressed
#   diag      python/tests/gpu/diag_exact.py on it (where df11's and BF16's steps part)
#             -> OUT/diag.log
#   bench     python -m df11.bench on it against BF16 and the official loader (when the
#             dfloat11 package is installed; $BENCH_ARGS adds arguments) -> OUT/bench.log,
#             OUT/bench.json
#   compile   bench/hf_static_compile.py on it: transformers' static-cache compiled generate,
#             BF16 against df11's modes ($COMPILE_ARGS adds arguments) -> OUT/compile.log,
#             OUT/compile.json
#   hook      host time of the per-block decode hook -> OUT/hook.log
#   memcheck  compute-sanitizer memcheck on a generate call through the package -> OUT/memcheck.log
set -u
out=$1
shift
steps=${*:-pytest}
here=$(cd "$(dirname "$0")" && pwd)
tests=$(dirname "$here")
export PYTHONUNBUFFERED=1
if [ ! -s "$out/gpu.txt" ]; then  # once per OUT
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
  python3 -c "import torch, transformers, df11; print('torch', torch.__version__, '| transformers', transformers.__version__, '| df11', df11.version(), 'cuda' if df11.has_cuda() else 'no cuda')" | tee -a "$out/gpu.txt"
fi
rc=0
for step in $steps; do
  case $step in
    cudatests)
      for t in "${DF11_CUDA_TESTS:-}" "${DF11_CAPI_GPU_TESTS:-}"; do
        [ -n "$t" ] || continue
        timeout "${CUDATESTS_TIMEOUT:-120}" "$t" --gtest_filter="${CUDA_TESTS_FILTER:-*}" 2>&1 \
          | tail -n 40 | tee -a "$out/cudatests.log"
        [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
      done ;;
    pytest)
      (cd "$tests" && timeout "${PYTEST_TIMEOUT:-400}" python3 -m pytest -q -p no:cacheprovider -rs \
         -k "${PYTEST_K:-not no_such_test}" . ) \
        2>&1 | tee "$out/pytest.log"
      [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1 ;;
    make8b)
      timeout "${MAKE_TIMEOUT:-150}" python3 "$here/bench_llama8b.py" --work /dev/shm/df11-bench \
        --make-only 2>&1 | tail -n 5
      [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1 ;;
    diag)
      timeout "${DIAG_TIMEOUT:-200}" python3 "$here/diag_exact.py" --work /dev/shm/df11-bench \
        --json "$out/diag.json" ${DIAG_ARGS:-} 2>&1 | grep -v "it/s" | tee "$out/diag.log"
      [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1 ;;
    bench)
      # shellcheck disable=SC2086
      timeout "${BENCH_TIMEOUT:-500}" python3 "$here/bench_llama8b.py" --work /dev/shm/df11-bench \
        --json "$out/bench.json" ${BENCH_ARGS:-} 2>&1 | grep -v "it/s" | tee "$out/bench.log"
      [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1 ;;
    compile)
      # shellcheck disable=SC2086
      timeout "${COMPILE_TIMEOUT:-400}" python3 "$tests/../../bench/hf_static_compile.py" \
        --bf16 /dev/shm/df11-bench/bf16 --df11 /dev/shm/df11-bench/df11 \
        --json "$out/compile.json" ${COMPILE_ARGS:-} 2>&1 | grep -v "it/s" | tee "$out/compile.log"
      [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1 ;;
    hook)
      timeout "${HOOK_TIMEOUT:-120}" python3 "$here/hook_overhead.py" 2>&1 | tee "$out/hook.log"
      [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1 ;;
    memcheck)
      timeout "${MEMCHECK_TIMEOUT:-300}" compute-sanitizer --tool memcheck --error-exitcode 9 python3 "$here/memcheck_generate.py" 2>&1 | tee "$out/memcheck.log"
      [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1 ;;
    *) echo "unknown step $step"; rc=2 ;;
  esac
done
exit $rc
