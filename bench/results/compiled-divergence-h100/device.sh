#!/bin/bash
out=$OUT; t0=$SECONDS
mkdir -p /tmp/r
[ -f /tmp/r/bin/df11 ] || tar xJf .carryr/run.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib DF11_LIBRARY_DIR=/tmp/r/lib DF11_TOOLS_LIBRARY_DIR=/tmp/r/lib \
  PYTHONPATH=$PWD/python DF11_CLI=/tmp/r/bin/df11 PYTHONUNBUFFERED=1
W=/dev/shm/df11-bench
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git log -1 --format=%H; } > $out/gpu.txt 2>&1
[ -f $W/df11/config.json ] || timeout 200 python3 python/tests/gpu/bench_llama8b.py --work $W --make-only > $out/model.log 2>&1
echo "model $((SECONDS-t0)) s"
TORCHINDUCTOR_CACHE_DIR=/tmp/ic1 timeout 200 python3 bench/compiled_logits.py --bf16 $W/bf16 --df11 $W/df11 \
  --variants bf16,decode --repeat 1 --json $out/timed.json > $out/timed.log 2>&1
echo "timed rc $? $((SECONDS-t0)) s"; grep variant $out/timed.log
python3 bench/results/compiled-divergence-h100/best_configs.py /tmp/ic1 > $out/best_configs.log 2>&1; tail -30 $out/best_configs.log
TORCHINDUCTOR_DETERMINISTIC=1 TORCHINDUCTOR_CACHE_DIR=/tmp/ic2 timeout $((580 - SECONDS)) python3 bench/compiled_logits.py --bf16 $W/bf16 --df11 $W/df11 \
  --variants ${VARIANTS:-bf16,decode,bf16+nocudnn,decode+nocudnn} --repeat 1 \
  --json $out/deterministic.json > $out/deterministic.log 2>&1
echo "det rc $? $((SECONDS-t0)) s"; grep variant $out/deterministic.log
