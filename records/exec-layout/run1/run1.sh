#!/usr/bin/env bash
# h20 device run 1: exec-layout GPU tests, df11-cuda-bench (all rows), glyd peers, memcheck.
set -uo pipefail
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/bin/lib
o=${OUT:-/tmp/out}; mkdir -p $o
t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $o/info.log 2>&1
timeout 150 bin/df11_cuda_tests --gtest_filter='CudaExec.*' > $o/tests.log 2>&1; echo "tests rc=$? $((SECONDS-t0))s"
timeout 220 bin/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 32 > $o/bench.log 2>&1; echo "bench rc=$? $((SECONDS-t0))s"
PYTHONPATH=$PWD/glyd PYTHONUNBUFFERED=1 timeout 100 python3 exec_peers.py --runs 30 --warmup 5 > $o/peers.log 2>&1; echo "peers rc=$? $((SECONDS-t0))s"
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 bin/df11_cuda_tests --gtest_filter='CudaExec.*:-CudaExec.LlamaMemberShapes' > $o/memcheck.log 2>&1; echo "memcheck rc=$? $((SECONDS-t0))s"
cat $o/info.log
grep -E '^\[  (PASSED|FAILED) |FAILED|Failure' $o/tests.log | head -20
grep -E -A30 '^Execution layout' $o/bench.log
grep -E 'GEMV rows' -A12 $o/bench.log | head -14
tail -12 $o/peers.log
grep -E 'ERROR SUMMARY|PASSED|FAILED' $o/memcheck.log | head -5
