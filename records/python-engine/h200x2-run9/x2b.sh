#!/usr/bin/env bash
# Lead device run 8, call 5 (two GPUs): device_map="auto" over two GPUs and cpu_offload.
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
out=${OUT:-/tmp/out}; mkdir -p "$out"
[ -d /tmp/site/df11 ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
  wheel/*.whl whl/*.whl > "$out/pip.log" 2>&1
export LD_LIBRARY_PATH=$here/lib:/tmp/site/df11/lib:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 DF11_CLI=$here/bin/df11
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
cd ../../python/tests && timeout 150 python3 -m pytest -v -p no:cacheprovider -rs gpu/test_gpu.py test_models_cpu.py -k "two_gpus or cpu_offload or auto_device_map or (logits_equal and llama and not official)" > "$out/pytest_2gpu.log" 2>&1
echo "rc=$?"; grep -E "PASS|FAIL|SKIP|passed|failed|Error" "$out/pytest_2gpu.log" | tail -n 12
