#!/usr/bin/env bash
# Lead device run 13 (one H100): the upload through two pinned buffers (python/df11/engine.py of
# the tree laid over the wheel of 10b0aa8): GPU tests of the load paths, then the 8B model's
# load against the official loader (df11.bench, warm page cache, imports first).
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
out=${OUT:-/tmp/out}; mkdir -p "$out"
t0=$SECONDS
rm -rf /tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site wheel/*.whl \
  whl/*.whl > "$out/pip.log" 2>&1 || { cat "$out/pip.log"; exit 3; }
cp ../../python/df11/*.py /tmp/site/df11/
export LD_LIBRARY_PATH=$here/lib:/tmp/site/df11/lib:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 DF11_CLI=$here/bin/df11
cd "$here/../.."
g=python/tests/gpu
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
(cd python/tests && timeout 100 python3 -m pytest -q -p no:cacheprovider -rs gpu/test_gpu.py -k "upload or df11_folder_cuda or cpu_offload or embedding_rows or hostile or (exec_mode_equals and llama)") > "$out/pytest_gpu.log" 2>&1
echo "pytest rc=$? at $((SECONDS-t0))s: $(tail -n 1 "$out/pytest_gpu.log")"
grep -E "FAILED|Error" "$out/pytest_gpu.log" | head -5
timeout 100 python3 $g/bench_llama8b.py --work /dev/shm/df11-bench --make-only 2>&1 | grep -v "it/s" | tail -n 3 | tee "$out/make.log"
echo "model ready at $((SECONDS-t0))s"
W=/dev/shm/df11-bench
timeout $((290 - (SECONDS - t0))) python3 -m df11.bench $W/df11 --bf16 $W/bf16 --batch 1 --tokens 8 \
  --compare dfloat11 --modes eager --repeat 1 --json "$out/bench.json" > "$out/bench.log" 2> "$out/bench.err"
echo "bench rc=$? at $((SECONDS-t0))s"
grep -E "load|before|torch.equal|DIFFER" "$out/bench.log"
