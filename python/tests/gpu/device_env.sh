# shellcheck shell=bash
# Sourced by a script that runs on a GPU machine without network, from a folder of copied
# files (docs/contributing.md, "GPU measurements"), so that each run's script holds only its own steps:
#
#   source python/tests/gpu/device_env.sh FILES OUT
#
# FILES holds wheel/*.whl (df11's wheel), optionally whl/*.whl (other pure-Python wheels, e.g.
# dfloat11 and dahuffman), lib/ (the shared libraries the machine lacks: libtbb, libxxhash,
# libzstd) and bin/df11. This installs the wheels into a fresh $DF11_SITE (default
# /tmp/site; pip --no-index, nothing fetched), lays the checkout's python/df11/*.py over the
# installed package when DF11_OVERLAY=1 (a Python change measured on an unchanged native
# library), exports LD_LIBRARY_PATH, PYTHONPATH, PYTHONUNBUFFERED and DF11_CLI, and writes the
# GPUs and torch's and transformers' versions to OUT/gpu.txt ($PYTHON: the interpreter,
# default python3). Returns non-zero, with pip's log on stderr,
# if the install fails.
device_env() {
  local files out site repo
  files=$(cd "$1" && pwd) || return 2
  out=$2
  site=${DF11_SITE:-/tmp/site}
  repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
  mkdir -p "$out"
  rm -rf "$site"
  local wheels=("$files"/wheel/*.whl)
  [ -e "$files/whl" ] && wheels+=("$files"/whl/*.whl)
  if ! "${PYTHON:-python3}" -m pip install -q --no-index --no-deps --no-compile --target "$site" "${wheels[@]}" \
      > "$out/pip.log" 2>&1; then
    cat "$out/pip.log" >&2
    return 3
  fi
  if [ "${DF11_OVERLAY:-0}" = 1 ]; then
    cp "$repo"/python/df11/*.py "$site/df11/" || return 3
  fi
  export LD_LIBRARY_PATH=$files/lib:$site/df11/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PYTHONPATH=$site PYTHONUNBUFFERED=1
  [ -x "$files/bin/df11" ] && export DF11_CLI=$files/bin/df11
  {
    if command -v nvidia-smi > /dev/null; then
      nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
    else
      echo "no nvidia-smi"
    fi
    "${PYTHON:-python3}" -c "import torch, transformers; print('torch', torch.__version__, '| transformers', transformers.__version__)" 2>&1
  } | tee "$out/gpu.txt"
}
device_env "$@"
