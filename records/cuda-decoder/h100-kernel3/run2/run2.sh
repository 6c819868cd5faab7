#!/usr/bin/env bash
# kernel3 helper, run 2: v26 (ranges balanced by cost) and v25 (v26 + predicated slot byte
# stores) against v24 and main's v23; tests of v26, decode A/B in 3 interleaved rounds, full
# bench of v26, ncu of v26 with stall reasons.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/k3b; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee $W/gpu.txt
timeout 90 $D/v26/df11_cuda_tests > $W/tests_v26.log 2>&1; echo "tests v26 rc=$?"; grep -E "^\[  (PASSED|FAILED) " $W/tests_v26.log
for round in 1 2 3; do
  for v in v23 v24 v26 v25; do
    timeout 60 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 --no-gemv > $W/dec_${v}_$round.log 2>&1
  done
done
for f in $W/dec_*.log; do echo "== $(basename $f): $(grep -E '^decode \(one launch\)' $f | cut -c28-90) $(grep -c 'bit-exact' $f)"; done
timeout 150 $D/v26/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 32 > $W/full_v26.log 2>&1; echo "full v26 rc=$?"
grep -E '^decode|^  all blocks, 1|^ +1 |fused, one launch |^verified' $W/full_v26.log | cut -c1-110
M="regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__warps_active.avg.pct_of_peak_sustained_active,sm__inst_executed.sum,smsp__inst_executed.avg.per_cycle_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,gpu__time_duration.sum"
for v in v24 v26; do
  timeout 120 ncu --clock-control none --kernel-name regex:decode_kernel --launch-skip 3 --launch-count 1 --metrics "$M" \
    $D/$v/df11-cuda-bench --runs 1 --warmup 3 --model-blocks 0 --no-gemv > $W/ncu_stalls_$v.log 2>&1; echo "ncu $v rc=$?"
done
grep -E "stalled|warps_active|inst_executed|wavefronts|conflicts|duration" $W/ncu_stalls_v26.log | awk '$NF+0 > 0.05 || /active|inst|wave|confl|dura/' | head -30
(cd $OUT && tar czf k3run2.tgz k3b && rm -rf k3b)
