#!/usr/bin/env bash
# Lead device run 8, call 4 (two H100s): device_map="auto" over two GPUs (the GPU pytest), then
# the 8B model and eager generate paired in one process on GPU 0 (python/tests/gpu/ab_eager.py).
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
out=${OUT:-/tmp/out}; mkdir -p "$out"
t0=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site wheel/*.whl \
  whl/*.whl > "$out/pip.log" 2>&1 || { cat "$out/pip.log"; exit 3; }
export LD_LIBRARY_PATH=$here/lib:/tmp/site/df11/lib:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 DF11_CLI=$here/bin/df11
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
(cd ../../python/tests && timeout 120 python3 -m pytest -q -p no:cacheprovider -rs gpu/test_gpu.py -k "two_gpus or cpu_offload") > "$out/pytest_2gpu.log" 2>&1
echo "pytest 2 GPUs rc=$? at $((SECONDS-t0))s: $(tail -n 1 "$out/pytest_2gpu.log")"
cd ../..
g=python/tests/gpu
timeout 150 python3 $g/bench_llama8b.py --work /dev/shm/df11-bench --make-only 2>&1 | grep -v "it/s" | tail -n 3 | tee "$out/make.log"
echo "model ready at $((SECONDS-t0))s"
CUDA_VISIBLE_DEVICES=0 timeout $((570 - (SECONDS - t0))) python3 $g/ab_eager.py --work /dev/shm/df11-bench --batch 1,8 --rounds 7 --json "$out/ab_eager.json" > "$out/ab_eager.log" 2>&1
echo "ab_eager rc=$? at $((SECONDS-t0))s"
grep -E "^(GPU|batch)" "$out/ab_eager.log"; tail -n 3 "$out/ab_eager.log" | grep -i error
grep -E "PASS|FAIL|SKIP|passed|failed" "$out/pytest_2gpu.log" | tail -n 5
