#!/usr/bin/env bash
# floor run 1: decode without output (null sink) and lookups alone (diagnostic builds), main;
# the fused kernel with one staging buffer at 3 thread blocks per SM (timing only) against main.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/run1; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $W/gpu.txt
for r in 1 2 3; do
  for v in main null lookup; do
    timeout 60 $D/$v/df11-cuda-bench --runs 30 --warmup 5 --model-blocks 0 --no-gemv > $W/dec_${v}_$r.log 2>&1
  done
done
for r in 1 2; do
  for v in main f3; do
    timeout 120 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 > $W/gemv_${v}_$r.log 2>&1
  done
done
for f in $W/dec_*.log; do echo "== $(basename $f): $(grep -E '^decode \(one launch\)' $f | cut -c1-100)"; done
for f in $W/gemv_*.log; do echo "== $(basename $f)"; grep -iE 'fused|cublas|reference' $f | head -12; done
(cd $OUT && tar czf run1.tgz run1 && rm -rf run1)
