#!/bin/bash
# Every GPU check of the df11 package in one go, on a machine with a CUDA GPU (one or two: the
# device_map test needs two), with df11 installed (pip install . from the checkout, or the
# wheel: pip install --no-deps df11-*.whl) and the df11 tool at $DF11_CLI (build/cli/df11).
#
#   python/tests/gpu/run_gpu.sh OUT [pytest|bench|memcheck]...   (default: pytest)
#
#   pytest    python/tests (CPU and GPU checks) -> OUT/pytest.log
#   bench     a Llama-3.1-8B-shaped model (random weights) made in /dev/shm, compressed, and
#             python -m df11.bench against BF16 and the official loader (when the dfloat11
#             package is installed) -> OUT/bench.log, OUT/bench.json
#   memcheck  compute-sanitizer memcheck on a generate call through the package -> OUT/memcheck.log
set -u
out=$1
shift
steps=${*:-pytest}
here=$(cd "$(dirname "$0")" && pwd)
tests=$(dirname "$here")
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
python3 -c "import torch, transformers, df11; print('torch', torch.__version__, '| transformers', transformers.__version__, '| df11', df11.version(), 'cuda' if df11.has_cuda() else 'no cuda')" | tee -a "$out/gpu.txt"
rc=0
for step in $steps; do
  case $step in
    pytest)
      (cd "$tests" && timeout "${PYTEST_TIMEOUT:-400}" python3 -m pytest -q -p no:cacheprovider -rs . ) \
        2>&1 | tee "$out/pytest.log"
      [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1 ;;
    bench)
      timeout "${BENCH_TIMEOUT:-500}" python3 "$here/bench_llama8b.py" --work /dev/shm/df11-bench \
        --json "$out/bench.json" ${BENCH_ARGS:-} 2>&1 | tee "$out/bench.log"
      [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1 ;;
    memcheck)
      timeout "${MEMCHECK_TIMEOUT:-300}" compute-sanitizer --tool memcheck --error-exitcode 9 python3 "$here/memcheck_generate.py" 2>&1 | tee "$out/memcheck.log"
      [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1 ;;
    *) echo "unknown step $step"; rc=2 ;;
  esac
done
exit $rc
