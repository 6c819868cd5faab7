#!/usr/bin/env bash
# h20 device run 5: the final build (8 warps per strip) against variant D (4 warps per strip:
# blocks live twice as long, 4 per SM), three interleaved rounds.
set -uo pipefail
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/bin/lib
o=${OUT:-/tmp/out}; mkdir -p $o
t0=$SECONDS
for r in 1 2 3; do
  timeout 100 bin/df11-cuda-bench --runs 30 --warmup 5 --model-blocks 32 > $o/bench_final$r.log 2>&1; echo "final$r rc=$? $((SECONDS-t0))s"
  timeout 100 bin/df11-cuda-bench-d --runs 30 --warmup 5 --model-blocks 32 > $o/bench_d$r.log 2>&1; echo "D$r rc=$? $((SECONDS-t0))s"
done
for f in bench_final1 bench_d1 bench_final2 bench_d2 bench_final3 bench_d3; do echo "== $f"; grep -E -A12 '^Execution layout' $o/$f.log | grep -E '^ +[0-9]+ |model line'; done
