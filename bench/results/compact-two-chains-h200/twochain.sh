#!/bin/bash
# compact GEMM: one chain (shipped) against two interleaved chains (timing only), alternating.
set -u
B=.carry/bin/compact_bench
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $OUT/gpu.txt
for v in ${VARIANTS:-one a b b a one}; do
  echo "== $v"
  if [ $v = one ]; then $B --runs 100 --warmup 10 --batch 1,8,16,32 --json > $OUT/$v-$SECONDS.json 2>$OUT/$v.err
  else DF11_COMPACT_TWO_CHAIN_TIMING=$v $B --runs 100 --warmup 10 --batch 1,8,16,32 --json > $OUT/$v-$SECONDS.json 2>$OUT/$v.err; fi
  echo "rc $? t=$SECONDS"
done
ls -la $OUT
