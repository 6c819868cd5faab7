#!/usr/bin/env bash
# h19b device run 6: are the 8B model's CUDA-graph steps reproducible across processes?
# (python/tests/gpu/diag_processes.py; run 5's diag found df11 == BF16 in one process, its
# benchmark found them apart across processes.) Logs and the table under $OUT.
set -uo pipefail
cd "$(dirname "$0")"
here=$PWD
final=${OUT:-/tmp/out}; mkdir -p "$final"
t0=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site wheel/*.whl \
  > "$final/pip.log" 2>&1 || { cat "$final/pip.log"; exit 3; }
export PYTHONPATH=/tmp/site DF11_CLI=$here/bin/df11 PYTHONUNBUFFERED=1 LD_LIBRARY_PATH=$here/lib
g=python/tests/gpu
d=/dev/shm/procs
log=$final/run6.log
note() { echo "$* (at $((SECONDS-t0))s)" | tee -a "$log"; }
timeout 70 python3 $g/bench_llama8b.py --work /dev/shm/df11-bench --make-only 2>&1 | grep -v "it/s" | tail -n 3 >> "$log"
note "made the 8B model"
proc() { local tag=$1 models=$2; shift 2
  if [ $((SECONDS-t0)) -gt 130 ]; then note "process $tag skipped (time)"; return; fi
  env "$@" timeout 50 python3 $g/diag_processes.py --out $d --tag "$tag" --models "$models" --steps $STEPS 2>&1 \
    | grep -E "^$tag|Error|error" | tail -n 3 >> "$log"; note "process $tag ($models $*) done"; }
export STEPS=160
proc p1 bf16
proc p2 bf16
proc p3 df11
proc p6 bf16,df11
python3 $g/diag_processes.py --out $d --compare > $final/compare1.txt 2>&1
if grep -q "p1-bf16 .* p2-bf16 .*DIFFER" $final/compare1.txt; then
  proc p4 bf16 CUBLAS_WORKSPACE_CONFIG=:4096:8
  proc p5 bf16 CUBLAS_WORKSPACE_CONFIG=:4096:8
fi
{ echo "==== run 6 ($(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader))"
  cat "$log"; python3 $g/diag_processes.py --out $d --compare; } 2>&1 | tee "$final/summary.txt"
