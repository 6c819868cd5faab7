#!/bin/bash
# The compact GEMM's next word read at a running shared-memory address (variant B, built with
# running-address.patch and -DDF11_COMPACT_RUNNING_ADDRESS) against the kernels as they are (A):
# B's CudaCompact tests and compute-sanitizer runs, then compact_bench A B B A, one process each.
# Binaries in $BIN (compact_bench_A, compact_bench_B, df11_cuda_tests_B, lib/); logs to $OUT.
set -u
BIN=${BIN:-.carry}
export LD_LIBRARY_PATH=$BIN/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $OUT/gpu.txt
small='CudaCompact.GemmEqualsTheReferenceGemmOnRaggedShapesAndEveryPattern:CudaCompact.GemmOfManyMatricesInOneCall'
echo "== tests"
$BIN/df11_cuda_tests_B --gtest_filter='CudaCompact.*' > $OUT/tests.log 2>&1; echo "tests rc $? ($SECONDS s)"
grep -E 'OK|PASSED|FAILED' $OUT/tests.log
for tool in ${TOOLS:-memcheck racecheck initcheck}; do
  timeout 200 compute-sanitizer --tool $tool $BIN/df11_cuda_tests_B --gtest_filter="$small" \
    > $OUT/$tool.log 2>&1
  echo "$tool rc $? ($SECONDS s): $(grep -E 'SUMMARY' $OUT/$tool.log | tail -1)"
done
i=0
for v in ${ORDER:-A B B A}; do
  i=$((i + 1))
  echo "== compact_bench $v ($SECONDS s)"
  $BIN/compact_bench_$v --runs 100 --warmup 10 --batch ${BATCH:-1,8,16} --json \
    > $OUT/bench-$i-$v.json 2> $OUT/bench-$i-$v.err
  echo "rc $?"
done
echo "== end ($SECONDS s)"
