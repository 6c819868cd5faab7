#!/usr/bin/env bash
# Lead device run 12 (two GPUs): the final main's wheel and CLI (10b0aa8):
# memcheck on a generate
# call, and the whole GPU pytest, device_map over two GPUs and cpu_offload included.
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
out=${OUT:-/tmp/out}; mkdir -p "$out"
t0=$SECONDS
rm -rf /tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site wheel/*.whl \
  whl/*.whl > "$out/pip.log" 2>&1 || { cat "$out/pip.log"; exit 3; }
# the wheel is the final main's own (no overlay)
export LD_LIBRARY_PATH=$here/lib:/tmp/site/df11/lib:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 DF11_CLI=$here/bin/df11
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 python3 ../../python/tests/gpu/memcheck_generate.py > "$out/memcheck_generate.log" 2>&1
echo "memcheck_generate rc=$? at $((SECONDS-t0))s: $(grep -E 'tokens equal|ERROR SUMMARY' "$out/memcheck_generate.log" | tr '\n' ' ')"
(cd ../../python/tests && timeout 300 python3 -m pytest -q -p no:cacheprovider -rs gpu/test_gpu.py gpu/test_compress_gpu.py test_models_cpu.py::test_auto_device_map_splits_blocks_over_two_gpus) > "$out/pytest_gpu.log" 2>&1
echo "pytest rc=$? at $((SECONDS-t0))s: $(tail -n 1 "$out/pytest_gpu.log")"
grep -E "FAILED|Error|SKIPPED" "$out/pytest_gpu.log" | head -10
