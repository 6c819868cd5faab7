#!/bin/bash
# Runs interop.py on the GPU machine. DIR holds df11 (the CLI, built for x86-64 Linux), the
# .so files the machine lacks (libtbb, libxxhash) and interop.py; WHL the wheels dfloat11,
# dahuffman, diffusers, importlib_metadata. Logs and a tarball of the official encoder's
# outputs go to OUT.
# Usage: run_gpu.sh DIR WHL OUT [interop.py options]
set -u
dir=$1 whl=$2 out=$3
shift 3
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site "$whl"/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
"$dir/df11" --version 2>&1 | tee -a "$out/gpu.txt"
work=/tmp/interop
python3 "$dir/interop.py" --df11 "$dir/df11" --work "$work" "$@" 2>&1 | tee "$out/interop.log"
rc=${PIPESTATUS[0]}
(cd "$work" && tar czf "$out/official_outputs.tar.gz" --exclude "note*" */official */official_bare */bf16 2>/dev/null)
exit "$rc"
