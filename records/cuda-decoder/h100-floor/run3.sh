#!/usr/bin/env bash
# floor run 3: SASS source page of one null-sink decode launch (where its barrier stalls are,
# beside the fused kernel's in run 2).
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/run3; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
timeout 300 ncu --clock-control none --kernel-name regex:decode_kernel --launch-skip 3 --launch-count 1 \
  --set full -f -o $W/null $D/null/df11-cuda-bench --runs 1 --warmup 3 --model-blocks 0 --no-gemv > $W/ncu_null_run.log 2>&1
ncu --import $W/null.ncu-rep > $W/ncu_null_full.log 2>&1
ncu --import $W/null.ncu-rep --page source --print-source sass --csv > $W/null_source.csv 2>&1
rm -f $W/null.ncu-rep
grep -E 'Duration|Executed Ipc A|Issue Slots|Executed Instructions ' $W/ncu_null_full.log
(cd $OUT && tar czf run3.tgz run3 && rm -rf run3)
