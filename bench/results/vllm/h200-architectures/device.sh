#!/bin/bash
# Device: vLLM from the parts (first call only), df11's libraries, then vllm_bench.sh with $RUNS
# (KIND, default latency) into $OUT; then, if ARCH=1, vllm_check.sh CASES=architectures.
if [ ! -d /tmp/vsite/vllm ]; then source .vllm/part10/device-install.sh || exit 1; else
  export PYTHONPATH=/tmp/vsite VLLM_USE_FLASHINFER_SAMPLER=0 HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1; fi
mkdir -p /tmp/r; [ -f /tmp/r/bin/df11 ] || tar xJf .carryr/run.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib DF11_LIBRARY_DIR=/tmp/r/lib DF11_TOOLS_LIBRARY_DIR=/tmp/r/lib \
  PYTHONPATH=$PYTHONPATH:$PWD/python DF11_CLI=/tmp/r/bin/df11 PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  git log -1 --format=%H 2>/dev/null
  python3 -c "import vllm, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)"; } > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
t0=$SECONDS
if [ -n "${RUNS:-}" ]; then
  bash python/tests/gpu/vllm_bench.sh "$OUT"
  echo "bench rc $? $((SECONDS - t0)) s"
  cut -c1-250 "$OUT/vllm_bench.log"
fi
if [ "${ARCH:-0}" = 1 ]; then
  t1=$SECONDS
  CASES=architectures MAKE=0 CASE_TIMEOUT=${CASE_TIMEOUT:-120} bash python/tests/gpu/vllm_check.sh "$OUT" /dev/shm/vc
  echo "check rc $? $((SECONDS - t1)) s"
  grep -E "^===|^---|EQUAL|DIFFER|differ|equal" "$OUT/vllm_check.log" | cut -c1-200
fi
echo "done $((SECONDS - t0)) s"
