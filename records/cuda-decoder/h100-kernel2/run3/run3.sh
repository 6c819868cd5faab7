#!/usr/bin/env bash
# kernel2 helper, run 3: v23 (warp totals through the pinned shared address) against v12:
# main's binary (v12), main's source built beside v23 (v12m), and the v12t build of run 2;
# tests + sanitizers of v23, decode A/B in 3 interleaved rounds, full bench, ncu of v23.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/k2c; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
bash bench/cuda_gpu_session.sh $D/v23 $W/v23 info tests memcheck racecheck initcheck 2>&1 | sed "s/^/v23 /"
for round in 1 2 3; do
  for v in v12 v12m v12t v23; do
    timeout 60 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 --no-gemv > $W/dec_${v}_$round.log 2>&1
  done
done
for f in $W/dec_*.log; do echo "== $(basename $f): $(grep -E '^decode \(one launch\)' $f | cut -c28-90)"; done
for v in v12m v23; do
  timeout 120 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 32 > $W/full_$v.log 2>&1; echo "full $v rc=$?"
  grep -E '^decode \(one launch\)|^  all blocks, 1|^ +1 |fused, one launch ' $W/full_$v.log | cut -c1-110
done
timeout 150 ncu --clock-control none --kernel-name regex:decode_kernel --launch-skip 3 --launch-count 1 --set full \
  $D/v23/df11-cuda-bench --runs 1 --warmup 3 --model-blocks 0 --no-gemv > $W/ncu_v23.log 2>&1; echo "ncu rc=$?"
grep -E "Duration|Executed Ipc Active|Issue Slots Busy|No Eligible|Executed Instructions  |Achieved Occupancy|Registers Per" $W/ncu_v23.log | head -12
(cd $OUT && tar czf k2run3.tgz k2c && rm -rf k2c)
