#!/usr/bin/env bash
# Final GPU session of the batchn helper: g7 (the committed code: BF16 tiles of x, FP32 at
# capacity 4) - all CUDA and C API GPU tests, memcheck/initcheck/racecheck of the GEMV tests -
# then main's kernel (base) against g6 (new: BF16 tiles at every batch) and g7, two rounds
# interleaved, and ncu of the fused kernel at batch 16 (base, g7) and 8 (g7).
set -u
D=$(cd "$(dirname "$0")" && pwd)
O=$OUT/c
mkdir -p $O
export LD_LIBRARY_PATH=$D/lib
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv; nvcc --version | tail -2; compute-sanitizer --version | head -2; ncu --version | tail -1; } > $O/gpu.txt 2>&1
mkdir -p /work/wt/batchn/build-cuda/cli && cp $D/g7/df11 /work/wt/batchn/build-cuda/cli/df11
step() {  # skipped when it could run past the call's 600 s (the tar must come back)
  local name=$1 limit=$2 t0=$SECONDS
  shift 2
  if [ $((SECONDS + limit)) -gt 560 ]; then echo "$name: skipped" | tee -a "$O/summary.txt"; return; fi
  timeout "$limit" "$@" > "$O/$name.log" 2>&1
  echo "$name: rc=$? $((SECONDS - t0)) s" | tee -a "$O/summary.txt"
}
step cuda_tests 60 $D/g7/df11_cuda_tests
step capi_gpu_tests 60 $D/g7/df11_capi_gpu_tests
step memcheck 60 env DF11_CUDA_TEST_SMALL=1 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 $D/g7/df11_cuda_tests --gtest_filter='CudaGemv.*'
step initcheck 60 env DF11_CUDA_TEST_SMALL=1 compute-sanitizer --tool initcheck --error-exitcode 9 $D/g7/df11_cuda_tests --gtest_filter='CudaGemv.*'
step racecheck 90 env DF11_CUDA_TEST_SMALL=1 compute-sanitizer --tool racecheck --error-exitcode 9 $D/g7/df11_cuda_tests --gtest_filter='CudaGemv.*'
for round in 1 2; do
  for v in base new g7; do
    step bench_${v}_$round 45 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0
  done
done
ncu_at() {  # ncu_at NAME VARIANT CAPACITY
  step $1 60 ncu --clock-control none --kernel-name-base demangled \
    --kernel-name "regex:fused_gemv_kernel<\\(unsigned int\\)$3>" --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
    --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
    $D/$2/df11-cuda-bench --runs 1 --warmup 0 --model-blocks 0
}
ncu_at ncu16_g7 g7 16
ncu_at ncu16_base base 16
ncu_at ncu8_g7 g7 8
cat $O/summary.txt
grep -HE "PASSED|FAILED" $O/cuda_tests.log $O/capi_gpu_tests.log
grep -H "ERROR SUMMARY\|RACECHECK SUMMARY" $O/memcheck.log $O/initcheck.log $O/racecheck.log
for f in $O/bench_*.log; do echo "== $(basename $f)"; grep -E '^ +(1|2|4|8|16) ' $f | cut -c1-100; done
for f in $O/ncu*.log; do echo "== $(basename $f)"; grep -E "==ERROR|No kernels| Duration|Executed Ipc Active|Issue Slots Busy|L1/TEX Hit Rate|L2 Hit Rate|Mem Busy|Max Bandwidth|L1/TEX Cache Throughput|L2 Cache Throughput|DRAM Throughput|No Eligible|Registers Per|Achieved Occupancy" $f | head -16; done
(cd $OUT && tar czf c.tgz c)
