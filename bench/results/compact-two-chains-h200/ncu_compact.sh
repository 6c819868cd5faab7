#!/bin/bash
set -u
B=.carry/bin/compact_bench
which ncu || ls /usr/local/cuda/bin/ncu
NCU=$(which ncu || echo /usr/local/cuda/bin/ncu)
for v in one a; do
  if [ $v = a ]; then export DF11_COMPACT_TWO_CHAIN_TIMING=a; fi
  timeout 250 $NCU -k regex:compact_gemm_kernel --launch-skip 8 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis_Tables --section Occupancy --section InstructionStats \
    --section SchedulerStats --section LaunchStats \
    $B --runs 1 --warmup 0 --batch 1 > $OUT/ncu_gate_b1_$v.txt 2>&1
  echo "$v rc $? t=$SECONDS"
done
