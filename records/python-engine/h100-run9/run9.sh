#!/usr/bin/env bash
# Lead device run 9 (one H100, one call): issue 19's rows in one run. The 8B-shaped model, then
# eager generate paired in one process (python/tests/gpu/ab_eager.py: BF16, df11, df11
# mode="exec", the official loader), then df11.bench (memory, load, CUDA graph; one process per
# variant, as the official inference.py measures).
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
out=${OUT:-/tmp/out}; mkdir -p "$out"
t0=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site wheel/*.whl \
  whl/*.whl > "$out/pip.log" 2>&1 || { cat "$out/pip.log"; exit 3; }
export LD_LIBRARY_PATH=$here/lib:/tmp/site/df11/lib:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 DF11_CLI=$here/bin/df11
cd "$here/../.."
g=python/tests/gpu
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, transformers, df11; print('torch', torch.__version__, '| transformers', transformers.__version__, '| df11', df11.version())"; } 2>&1 | tee "$out/gpu.txt"
timeout 150 python3 $g/bench_llama8b.py --work /dev/shm/df11-bench --make-only 2>&1 | grep -v "it/s" | tail -n 3 | tee "$out/make.log"
echo "model ready at $((SECONDS-t0))s" | tee -a "$out/steps.txt"
timeout 240 python3 $g/ab_eager.py --work /dev/shm/df11-bench --batch 1,8 --rounds 9 --json "$out/ab_eager.json" > "$out/ab_eager.log" 2>&1
echo "ab_eager rc=$? at $((SECONDS-t0))s" | tee -a "$out/steps.txt"
timeout $((580 - (SECONDS - t0))) python3 -m df11.bench /dev/shm/df11-bench/df11 --bf16 /dev/shm/df11-bench/bf16 \
  --batch 1,8 --tokens 256 --compare bf16,dfloat11:eager,df11-exec --cuda-graphs \
  --repeat 3 --eager-tokens 16 --graph-batch 1 --json "$out/bench.json" > "$out/bench.log" 2> "$out/bench.err"
echo "bench rc=$? at $((SECONDS-t0))s" | tee -a "$out/steps.txt"
grep -E "^(GPU|batch)" "$out/ab_eager.log"; tail -n 3 "$out/ab_eager.log" | grep -i error
grep -E "failed|Error" "$out/bench.err" | head -5
cat "$out/bench.log"
