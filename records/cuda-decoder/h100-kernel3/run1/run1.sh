#!/usr/bin/env bash
# kernel3 helper, run 1: v24 (third thread block per SM) against main's v23 binary and the
# v24d diagnostic (v24's kernel at 2 thread blocks per SM); tests of v24, decode A/B in 3
# interleaved rounds, full bench of v23 and v24, ncu of v24.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/k3a; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee $W/gpu.txt
timeout 90 $D/v24/df11_cuda_tests > $W/tests_v24.log 2>&1; echo "tests v24 rc=$?"; grep -E "^\[  (PASSED|FAILED) " $W/tests_v24.log
for round in 1 2 3; do
  for v in v23 v24 v24d; do
    timeout 60 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 --no-gemv > $W/dec_${v}_$round.log 2>&1
  done
done
grep -h "^device" $W/dec_v23_1.log $W/dec_v24_1.log $W/dec_v24d_1.log | cut -c1-140
for f in $W/dec_*.log; do echo "== $(basename $f): $(grep -E '^decode \(one launch\)' $f | cut -c28-90) $(grep -c 'bit-exact' $f)"; done
for v in v23 v24; do
  timeout 150 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 32 > $W/full_$v.log 2>&1; echo "full $v rc=$?"
  grep -E '^decode|^  all blocks, 1|^ +1 |fused, one launch |^verified' $W/full_$v.log | cut -c1-110
done
timeout 150 ncu --clock-control none --kernel-name regex:decode_kernel --launch-skip 3 --launch-count 1 --set full \
  $D/v24/df11-cuda-bench --runs 1 --warmup 3 --model-blocks 0 --no-gemv > $W/ncu_v24.log 2>&1; echo "ncu rc=$?"
grep -E "Duration|Executed Ipc Active|Issue Slots Busy|No Eligible|Executed Instructions  |Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|DRAM Throughput|Shared Memory Configuration Size|Dynamic Shared" $W/ncu_v24.log | head -20
(cd $OUT && tar czf k3run1.tgz k3a && rm -rf k3a)
