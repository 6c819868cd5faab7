#!/bin/bash
# Runs interop.py on the GPU machine. DIR holds df11 (the CLI, built for x86-64 Linux), the
# .so files the machine lacks (libtbb, libxxhash) and interop.py; WHL the wheels dfloat11,
# dahuffman, diffusers, importlib_metadata. Logs and a tarball of the official encoder's
# outputs go to OUT.
#
# With TF4_WHL=DIR (wheels transformers 4.57, huggingface_hub 0.36, tokenizers, requests and
# its dependencies), a second pass runs TF4_FAMILIES (default: the seven language-model families;
# not flux: diffusers 0.42 needs huggingface_hub 1.x, which transformers 4 cannot use) under
# transformers 4, the version dfloat11 0.5.0 was written for (its MoE models hold one module
# per expert), into OUT/interop-transformers4.log; then the installed transformers 5 tries
# the official loader on that pass's MoE folders (INFO lines, OUT/probe-transformers5.log).
# Usage: [TF4_WHL=DIR] run_gpu.sh DIR WHL OUT [interop.py options]
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

if [ -n "${TF4_WHL:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site-tf4 "$TF4_WHL"/*.whl || exit 1
  work4=/tmp/interop-tf4
  PYTHONPATH=/tmp/site-tf4:/tmp/site python3 "$dir/interop.py" --df11 "$dir/df11" \
    --work "$work4" --families "${TF4_FAMILIES:-llama,qwen2,qwen3,mistral,gemma3,phi3,qwen3moe}" 2>&1 \
    | tee "$out/interop-transformers4.log"
  rc4=${PIPESTATUS[0]}
  [ "$rc" -ne 0 ] || rc=$rc4
  (cd "$work4" && tar czf "$out/official_outputs_transformers4.tar.gz" \
    */official */official_bare */bf16 2>/dev/null)
  python3 "$dir/interop.py" --df11 "$dir/df11" --work "$work4" \
    --probe-load "$work4/qwen3moe/official" --probe-load "$work4/qwen3moe/df11" 2>&1 \
    | tee "$out/probe-transformers5.log"
fi
exit "$rc"
