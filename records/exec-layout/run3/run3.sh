#!/usr/bin/env bash
# h20 device run 3: the final build (GEMM as run 1's A, decode as run 2's B) against variant C
# (batch-1 GEMM built for 3 thread blocks per multiprocessor), two rounds each; glyd peers with
# CUDA graphs; every CUDA test; memcheck/racecheck/initcheck of the exec tests.
set -uo pipefail
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/bin/lib
o=${OUT:-/tmp/out}; mkdir -p $o
t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $o/info.log 2>&1
for r in 1 2; do
  timeout 100 bin/df11-cuda-bench --runs 30 --warmup 5 --model-blocks 32 > $o/bench_final$r.log 2>&1; echo "bench final$r rc=$? $((SECONDS-t0))s"
  timeout 100 bin/df11-cuda-bench-c --runs 30 --warmup 5 --model-blocks 32 > $o/bench_c$r.log 2>&1; echo "bench C$r rc=$? $((SECONDS-t0))s"
done
PYTHONPATH=$PWD/glyd PYTHONUNBUFFERED=1 timeout 150 python3 exec_peers.py --runs 30 --warmup 5 > $o/peers.log 2>&1; echo "peers rc=$? $((SECONDS-t0))s"
f='CudaExec.*:-CudaExec.LlamaMemberShapes'
for tool in memcheck racecheck initcheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 bin/df11_cuda_tests --gtest_filter="$f" > $o/$tool.log 2>&1; echo "$tool rc=$? $((SECONDS-t0))s"
done
timeout 200 bin/df11_cuda_tests > $o/cuda_tests.log 2>&1; echo "all cuda tests rc=$? $((SECONDS-t0))s"
cat $o/info.log
for f in bench_final1 bench_c1 bench_final2 bench_c2; do echo "== $f"; grep -E -A12 '^Execution layout' $o/$f.log | grep -E 'Execution|transcode|BF16 |^ +[0-9]+ |model line'; done
tail -12 $o/peers.log
grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $o/memcheck.log $o/racecheck.log $o/initcheck.log
grep -E '^\[  (PASSED|FAILED) |^\[  FAILED' $o/cuda_tests.log | head
