#!/usr/bin/env bash
# Lead device run 7, call 2 (same warm machine, the model from call 1 in /dev/shm): the seeds'
# scenario (GPU memory capped at 13 GB: df11 on the GPU against BF16 that does not fit and BF16
# with accelerate CPU offload), then CUDA-graph steps across processes (diag_processes.py).
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
out=${OUT:-/tmp/out}; mkdir -p "$out"
t0=$SECONDS
export LD_LIBRARY_PATH=$here/lib:${LD_LIBRARY_PATH:-}
[ -d /tmp/site/df11 ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
  wheel/*.whl whl/*.whl > "$out/pip.log" 2>&1 && tar xzf whl/glyd-site.tgz -C /tmp/site
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
unset DF11_CLI
cd "$here/../.."
g=python/tests/gpu
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
[ -d /dev/shm/df11-bench/df11 ] || timeout 150 python3 $g/bench_llama8b.py --work /dev/shm/df11-bench --make-only 2>&1 | tail -n 3
echo "model ready at $((SECONDS-t0))s" | tee -a "$out/steps.txt"
timeout 240 python3 -m df11.bench /dev/shm/df11-bench/df11 --bf16 /dev/shm/df11-bench/bf16 \
  --gpu-memory 13 --batch 1,8 --compare bf16,bf16-offload --modes eager --eager-tokens 8 \
  --repeat 2 --json "$out/seeds.json" > "$out/seeds.log" 2> "$out/seeds.err"
echo "seeds rc=$? at $((SECONDS-t0))s" | tee -a "$out/steps.txt"
d=/dev/shm/procs
for p in "p1 bf16" "p3 df11"; do
  set -- $p
  if [ $((SECONDS-t0)) -gt 480 ]; then echo "process $1 skipped (time)" | tee -a "$out/steps.txt"; continue; fi
  timeout 90 python3 $g/diag_processes.py --work /dev/shm/df11-bench --out $d --tag "$1" --models "$2" --steps 160 \
    > "$out/proc-$1.log" 2>&1
  echo "process $1 ($2) rc=$? at $((SECONDS-t0))s" | tee -a "$out/steps.txt"
done
python3 $g/diag_processes.py --out $d --compare > "$out/procs.txt" 2>&1
grep -E "does not fit|failed" "$out/seeds.err" | head -5
cat "$out/seeds.log" "$out/procs.txt"
