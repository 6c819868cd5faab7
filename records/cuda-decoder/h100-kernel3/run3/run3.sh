#!/usr/bin/env bash
# kernel3 helper, run 3 (final): the branch's final binaries (v24f, decode v24 rebased on
# main) against main's v23 binary: 24 CUDA tests, memcheck, racecheck, initcheck of v24f,
# decode A/B in 3 interleaved rounds, full bench of both, ncu of v24f.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/k3c; mkdir -p $W
bash bench/cuda_gpu_session.sh $D/v24f $W/v24f info tests memcheck racecheck initcheck 2>&1 | sed "s/^/v24f /"
for round in 1 2 3; do
  for v in v23 v24f; do
    timeout 60 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 --no-gemv > $W/dec_${v}_$round.log 2>&1
  done
done
for f in $W/dec_*.log; do echo "== $(basename $f): $(grep -E '^decode \(one launch\)' $f | cut -c28-90) $(grep -c 'bit-exact' $f)"; done
for v in v23 v24f; do
  timeout 150 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 32 > $W/full_$v.log 2>&1; echo "full $v rc=$?"
  grep -E '^decode|^  all blocks|^  32 |^ +[0-9]+ +0\.|fused, one |^verified' $W/full_$v.log | cut -c1-120
done
timeout 150 ncu --clock-control none --kernel-name regex:decode_kernel --launch-skip 3 --launch-count 1 --set full \
  $D/v24f/df11-cuda-bench --runs 1 --warmup 3 --model-blocks 0 --no-gemv > $W/ncu_v24f.log 2>&1; echo "ncu rc=$?"
grep -E "Duration|Executed Ipc Active|Issue Slots Busy|No Eligible|Executed Instructions  |Achieved Occupancy|Theoretical Occupancy|Registers Per|DRAM Throughput" $W/ncu_v24f.log | head -12
(cd $OUT && tar czf k3run3.tgz k3c && rm -rf k3c)
