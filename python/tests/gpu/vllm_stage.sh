#!/bin/bash
# On a GPU machine, the steps after vllm_parts.sh: the parts copied one call each, then vLLM and
# df11 installed, then vLLM's benchmarks (vllm_bench.sh), each step one call on one warm machine
# (it goes back after ~30 s idle, and /tmp with it: then begin again at part 0).
#
#   python/tests/gpu/vllm_stage.sh copy K       carry .vllm/partK: its pieces to /tmp/vparts
#   python/tests/gpu/vllm_stage.sh install OUT  carry the last part: vLLM into /tmp/vsite
#                                               (device-install.sh), df11 from its run.tar.xz
#                                               (device_env.sh), bench_llama8b.py --make-only
#   python/tests/gpu/vllm_stage.sh bench OUT    carry the last part: vllm_bench.sh OUT/r with
#                                               KIND, RUNS, LATENCY_ARGS, ... as it reads them
#
# WORK (default /dev/shm/df11-bench) holds the model folders. Exit status: the step's.
set -u
here=$(cd "$(dirname "$0")" && pwd)
step=${1:?usage: vllm_stage.sh copy K | install OUT | bench OUT}
arg=${2:?usage: vllm_stage.sh copy K | install OUT | bench OUT}
work=${WORK:-/dev/shm/df11-bench}
case $step in copy|install|bench) ;; *)
  echo "vllm_stage.sh: unknown step $step (copy, install or bench)" >&2
  exit 2 ;;
esac
if [ "$step" = copy ]; then
  mkdir -p /tmp/vparts && cp ".vllm/part$arg"/piece_* /tmp/vparts/ || exit 2
  ls -l /tmp/vparts
  exit 0
fi
end=""
for f in .vllm/part*/run.tar.xz; do [ -f "$f" ] && end=$(dirname "$f"); done
[ -n "$end" ] || { echo "vllm_stage.sh: carry the last part (.vllm/partN with run.tar.xz)" >&2; exit 2; }
out=$arg
mkdir -p "$out" /tmp/files
tar -C /tmp/files -xJf "$end/run.tar.xz" || exit 2
# shellcheck disable=SC1091
source "$here/device_env.sh" /tmp/files "$out/env" || exit 3
case $step in
  install)
    mkdir -p /tmp/vparts
    # shellcheck disable=SC1091
    source "$end/device-install.sh" || exit 4
    python3 -c "import vllm; print('vllm', vllm.__version__)" || exit 4
    python3 "$here/bench_llama8b.py" --work "$work" --shape "${SHAPE:-8b}" --make-only > "$out/make.log" 2>&1
    status=$?
    tail -n 5 "$out/make.log"
    exit $status
    ;;
  bench)
    [ -d /tmp/vsite/vllm ] || { echo "vllm_stage.sh: run the install step first" >&2; exit 2; }
    export PYTHONPATH=/tmp/vsite:$PYTHONPATH VLLM_USE_FLASHINFER_SAMPLER=0 HF_HUB_OFFLINE=1 \
      VLLM_NO_USAGE_STATS=1
    bash "$here/vllm_bench.sh" "$out/r" "$work"
    status=$?
    cut -c1-250 "$out/r/vllm_bench.log"
    exit $status
    ;;
esac
