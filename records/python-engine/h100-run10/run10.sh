#!/usr/bin/env bash
# Lead device run 10 (one H100): exec mode's leaner per-Linear path (python/df11/_cuda.py,
# exec_mode.py, engine.py from lead-bench, laid over run 8's wheel): the GPU tests of the exec
# mode and the graphs, then eager generate paired in one process (ab_eager.py).
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
(cd python/tests && timeout 150 python3 -m pytest -q -p no:cacheprovider -rs gpu/test_gpu.py -k "exec or graph or compile or (logits_equal and (llama or qwen2))") > "$out/pytest_gpu.log" 2>&1
echo "pytest rc=$? at $((SECONDS-t0))s: $(tail -n 1 "$out/pytest_gpu.log")"
[ -d /dev/shm/df11-bench/df11 ] || timeout 150 python3 $g/bench_llama8b.py --work /dev/shm/df11-bench --make-only 2>&1 | grep -v "it/s" | tail -n 3 | tee "$out/make.log"
echo "model ready at $((SECONDS-t0))s"
timeout $((560 - (SECONDS - t0))) python3 $g/ab_eager.py --work /dev/shm/df11-bench --batch 1,8 --rounds 9 --json "$out/ab_eager.json" > "$out/ab_eager.log" 2>&1
echo "ab_eager rc=$? at $((SECONDS-t0))s"
grep -E "^(GPU|batch)" "$out/ab_eager.log"; tail -n 3 "$out/ab_eager.log" | grep -i error
grep -E "FAIL|Error" "$out/pytest_gpu.log" | head -5
