#!/usr/bin/env bash
# kernel4 helper, run 6: where clusters put their thread blocks. v29's dynamic loop with a
# per-thread-block trace (start, cluster rank, cluster index, end, SM, blocks decoded) at
# clusters of 2 and 3; the header line of each launch gives cudaOccupancyMaxActiveClusters.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib
W=$OUT/k4r6; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $W/gpu.txt
for c in 2 3; do
  DF11_TRACE=$W/trace_c$c.txt DF11_DECODE_CLUSTER=$c timeout 60 $D/tracec/df11-cuda-bench --runs 3 --warmup 1 --model-blocks 0 --no-gemv > $W/dec_trace_c$c.log 2>&1; echo "trace c$c rc=$?"
  grep -h "^decode (one\|^verified" $W/dec_trace_c$c.log
done
(cd $OUT && tar czf k4r6.tgz k4r6 && rm -rf k4r6)
