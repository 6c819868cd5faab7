#!/usr/bin/env bash
# Lead device run 11 (one H100): df11.bench's load rows from a warm page cache, imports first
# (lead-bench 4bd0aa7's bench.py, exec_mode.py, engine.py, _cuda.py laid over run 8's wheel).
# The bench twice, in two orders, to show the load rows no longer depend on the order.
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
out=${OUT:-/tmp/out}; mkdir -p "$out"
t0=$SECONDS
rm -rf /tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site wheel/*.whl \
  whl/*.whl > "$out/pip.log" 2>&1 || { cat "$out/pip.log"; exit 3; }
cp py/*.py /tmp/site/df11/
export LD_LIBRARY_PATH=$here/lib:/tmp/site/df11/lib:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 DF11_CLI=$here/bin/df11
cd "$here/../.."
g=python/tests/gpu
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
[ -d /dev/shm/df11-bench/df11 ] || timeout 150 python3 $g/bench_llama8b.py --work /dev/shm/df11-bench --make-only 2>&1 | grep -v "it/s" | tail -n 3 | tee "$out/make.log"
echo "model ready at $((SECONDS-t0))s"
W=/dev/shm/df11-bench
for order in "bf16,dfloat11" "dfloat11,bf16"; do
  n=${order%%,*}
  timeout $((570 - (SECONDS - t0))) python3 -m df11.bench $W/df11 --bf16 $W/bf16 --batch 1 --tokens 8 \
    --compare $order --modes eager --repeat 1 --json "$out/bench-$n-second.json" > "$out/bench-$n-second.log" 2> "$out/bench-$n-second.err"
  echo "bench (df11 then $order) rc=$? at $((SECONDS-t0))s"
  grep -E "load|before" "$out/bench-$n-second.log"
done
