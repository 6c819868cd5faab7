#!/bin/bash
# Inductor's default against its deterministic mode: transformers' static-cache compiled step
mkdir -p /tmp/r; [ -f /tmp/r/bin/df11 ] || tar xJf .carryr/run.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib DF11_LIBRARY_DIR=/tmp/r/lib DF11_TOOLS_LIBRARY_DIR=/tmp/r/lib \
  PYTHONPATH=$PWD/python:$PWD/python/tests DF11_CLI=/tmp/r/bin/df11 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  git log -1 --format=%H 2>/dev/null
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"; } > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
t0=$SECONDS
[ -d /dev/shm/df11-bench ] || timeout 150 python3 python/tests/gpu/bench_llama8b.py --work /dev/shm/df11-bench --make-only 2>&1 | tail -n 3
echo "make $((SECONDS - t0)) s"; ls /dev/shm/df11-bench
B=/dev/shm/df11-bench/bf16; D=/dev/shm/df11-bench/df11
for v in ${ORDER:-default deterministic}; do
  t1=$SECONDS
  if [ $v = deterministic ]; then export TORCHINDUCTOR_DETERMINISTIC=1; else unset TORCHINDUCTOR_DETERMINISTIC; fi
  timeout ${TC:-230} python3 bench/hf_static_compile.py --bf16 $B --df11 $D --modes ${MODES:-decode,exec} --repeat 3 \
    --json "$OUT/compile-$v.json" > "$OUT/compile-$v.log" 2>&1
  echo "$v rc $? $((SECONDS - t1)) s"
  grep -v "it/s" "$OUT/compile-$v.log" | tail -n 25 | cut -c1-220
done
