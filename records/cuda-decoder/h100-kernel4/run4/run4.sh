#!/usr/bin/env bash
# kernel4 helper, run 4: where the single-block launch's time goes. A diagnostic build of
# main's v24 kernel (trace) records per thread block, with %globaltimer: start, tables
# staged, first block done, last block started, end, SM id, blocks (never committed).
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/k4r4; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
timeout 60 $D/main/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 --no-gemv > $W/dec_main.log 2>&1
timeout 60 $D/trace/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0 --no-gemv > $W/dec_trace_notrace.log 2>&1
DF11_TRACE=$W/trace.txt timeout 120 $D/trace/df11-cuda-bench --runs 8 --warmup 2 --model-blocks 0 --no-gemv > $W/dec_trace.log 2>&1; echo "trace rc=$?"
grep -h "^decode (one" $W/dec_*.log
grep -c launch $W/trace.txt
(cd $OUT && tar czf k4r4.tgz k4r4 && rm -rf k4r4)
