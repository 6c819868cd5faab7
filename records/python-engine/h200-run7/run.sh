#!/usr/bin/env bash
# Lead device run 7, call 1: the 8B-shaped model made and compressed (df11.compress), then the
# benchmark: df11, BF16, the official loader, df11 mode="exec" (eager and CUDA graphs) and glyd
# at batch 1, 8 and 32. Logs under $OUT; the table last.
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
out=${OUT:-/tmp/out}; mkdir -p "$out"
t0=$SECONDS
export LD_LIBRARY_PATH=$here/lib:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site wheel/*.whl \
  whl/*.whl > "$out/pip.log" 2>&1 && tar xzf whl/glyd-site.tgz -C /tmp/site || { cat "$out/pip.log"; exit 3; }
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
unset DF11_CLI
cd "$here/../.."
g=python/tests/gpu
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
lscpu | grep -E "Model name|^CPU\(s\)" >> "$out/gpu.txt"
python3 -c "import torch, transformers, df11; print('torch', torch.__version__, '| transformers', transformers.__version__, '| df11', df11.version())" >> "$out/gpu.txt" 2>&1
timeout 150 python3 $g/bench_llama8b.py --work /dev/shm/df11-bench --make-only 2>&1 | grep -v "it/s" | tail -n 5 | tee "$out/make.log"
echo "made at $((SECONDS-t0))s" | tee -a "$out/steps.txt"
timeout $((570 - (SECONDS - t0))) python3 -m df11.bench /dev/shm/df11-bench/df11 --bf16 /dev/shm/df11-bench/bf16 \
  --batch 1,8,32 --tokens 256 --compare bf16,dfloat11:eager,df11-exec,glyd:eager --cuda-graphs \
  --repeat 3 --eager-tokens 16 --graph-batch 1 --json "$out/bench.json" > "$out/bench.log" 2> "$out/bench.err"
echo "bench rc=$? at $((SECONDS-t0))s" | tee -a "$out/steps.txt"
grep -E "failed|Error|error" "$out/bench.err" | head -20
cat "$out/bench.log"
