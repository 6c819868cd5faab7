#!/usr/bin/env bash
# floor run 2: ncu of main's fused kernel at batch 1 (full set + SASS source page as CSV) and of
# the null-sink decode (instruction count beside the fused kernel's).
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/run2; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
timeout 300 ncu --clock-control none --kernel-name regex:fused_gemv_kernel --launch-skip 3 --launch-count 1 \
  --set full -f -o $W/fused $D/main/df11-cuda-bench --runs 1 --warmup 3 --model-blocks 0 > $W/ncu_fused_run.log 2>&1
ncu --import $W/fused.ncu-rep > $W/ncu_fused.log 2>&1
ncu --import $W/fused.ncu-rep --page source --print-source sass --csv > $W/fused_source.csv 2>&1
rm -f $W/fused.ncu-rep
timeout 200 ncu --clock-control none --kernel-name regex:decode_kernel --launch-skip 3 --launch-count 1 \
  --section SpeedOfLight --section LaunchStats --section Occupancy --section InstructionStats \
  $D/null/df11-cuda-bench --runs 1 --warmup 3 --model-blocks 0 --no-gemv > $W/ncu_null.log 2>&1
grep -E 'Duration|Executed Ipc|Issue Slots|Registers|Achieved Occupancy|Executed Instructions' $W/ncu_fused.log $W/ncu_null.log | head -30
(cd $OUT && tar czf run2.tgz run2 && rm -rf run2)
