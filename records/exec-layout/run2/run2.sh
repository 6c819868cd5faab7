#!/usr/bin/env bash
# h20 device run 2: tests (B), A/B benchmark (A = run-1 kernels, B = 8 steps in flight,
# streaming loads/stores), glyd peers, compute-sanitizer memcheck/racecheck/initcheck.
set -uo pipefail
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/bin/lib
o=${OUT:-/tmp/out}; mkdir -p $o
t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $o/info.log 2>&1
timeout 120 bin/df11_cuda_tests --gtest_filter='CudaExec.*' > $o/tests.log 2>&1; echo "tests rc=$? $((SECONDS-t0))s"
for r in 1 2; do
  timeout 100 bin/df11-cuda-bench-a --runs 20 --warmup 5 --model-blocks 32 > $o/bench_a$r.log 2>&1; echo "bench A$r rc=$? $((SECONDS-t0))s"
  timeout 100 bin/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 32 > $o/bench_b$r.log 2>&1; echo "bench B$r rc=$? $((SECONDS-t0))s"
done
PYTHONPATH=$PWD/glyd PYTHONUNBUFFERED=1 timeout 150 python3 exec_peers.py --runs 30 --warmup 5 > $o/peers.log 2>&1; echo "peers rc=$? $((SECONDS-t0))s"
f='CudaExec.*:-CudaExec.LlamaMemberShapes'
for tool in memcheck racecheck initcheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 bin/df11_cuda_tests --gtest_filter="$f" > $o/$tool.log 2>&1; echo "$tool rc=$? $((SECONDS-t0))s"
done
cat $o/info.log
grep -E '^\[  (PASSED|FAILED) |Failure' $o/tests.log | head -10
for f in bench_a1 bench_b1 bench_a2 bench_b2; do echo "== $f"; grep -E -A12 '^Execution layout' $o/$f.log | grep -E 'transcode|BF16 |^ +[0-9]+ |model line'; done
tail -14 $o/peers.log
grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' $o/memcheck.log $o/racecheck.log $o/initcheck.log | head -12
