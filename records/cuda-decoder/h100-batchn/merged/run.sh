#!/usr/bin/env bash
# Last GPU session of the batchn helper: the branch rebased onto main with decode v23
# (merged: v23 + fused GEMV g7) against main's binary (v23 + g5's sink): all CUDA and C API
# GPU tests, memcheck/initcheck/racecheck of the GEMV tests, then two interleaved rounds of
# df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0.
set -u
D=$(cd "$(dirname "$0")" && pwd)
O=$OUT/e
mkdir -p $O
export LD_LIBRARY_PATH=$D/lib
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $O/gpu.txt 2>&1
mkdir -p /work/wt/batchn/build-cuda/cli && cp $D/merged/df11 /work/wt/batchn/build-cuda/cli/df11
step() {
  local name=$1 limit=$2 t0=$SECONDS
  shift 2
  timeout "$limit" "$@" > "$O/$name.log" 2>&1
  echo "$name: rc=$? $((SECONDS - t0)) s" | tee -a "$O/summary.txt"
}
step cuda_tests 60 $D/merged/df11_cuda_tests
step capi_gpu_tests 60 $D/merged/df11_capi_gpu_tests
step memcheck 60 env DF11_CUDA_TEST_SMALL=1 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 $D/merged/df11_cuda_tests --gtest_filter='CudaGemv.*'
step initcheck 60 env DF11_CUDA_TEST_SMALL=1 compute-sanitizer --tool initcheck --error-exitcode 9 $D/merged/df11_cuda_tests --gtest_filter='CudaGemv.*'
step racecheck 90 env DF11_CUDA_TEST_SMALL=1 compute-sanitizer --tool racecheck --error-exitcode 9 $D/merged/df11_cuda_tests --gtest_filter='CudaGemv.*'
for round in 1 2; do
  for v in main merged; do
    step bench_${v}_$round 45 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0
  done
done
grep -HE "PASSED|FAILED" $O/cuda_tests.log $O/capi_gpu_tests.log
grep -H "ERROR SUMMARY\|RACECHECK SUMMARY" $O/memcheck.log $O/initcheck.log $O/racecheck.log
for f in $O/bench_*.log; do echo "== $(basename $f)"; grep -E '^decode \(one|^ +(1|2|4|8|16) ' $f | cut -c1-100; done
(cd $OUT && tar czf e.tgz e)
