#!/usr/bin/env bash
# kernel3 helper, run 4: the fused kernel's batch 1-16 rows with the plan's layout (v24f)
# and with the fixed layout (v24g: whole joined table static, 68-byte slots, as main)
# against main's v23 binary, two interleaved rounds; the decode rows come along.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/k3d; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee $W/gpu.txt
for round in 1 2; do
  for v in v23 v24f v24g; do
    timeout 120 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 > $W/gemv_${v}_$round.log 2>&1
    echo "== $v $round: $(grep -E '^decode \(one launch\)' $W/gemv_${v}_$round.log | cut -c28-60)"
    grep -E '^ +[0-9]+ +0\.|^ +16 ' $W/gemv_${v}_$round.log | cut -c1-100
  done
done
(cd $OUT && tar czf k3run4.tgz k3d && rm -rf k3d)
