#!/usr/bin/env bash
# GPU session of the batchn helper (fused GEMV g6): tests first, then main's kernel (base)
# against g6 with BF16 tiles (new) and with FP32 tiles (f32), two rounds interleaved, then
# memcheck/initcheck of both variants and ncu of the fused kernel at batch 16.
set -u
D=$(cd "$(dirname "$0")" && pwd)
O=$OUT/b
mkdir -p $O
export LD_LIBRARY_PATH=$D/lib
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv; nvcc --version | tail -2; compute-sanitizer --version | head -2; } > $O/gpu.txt 2>&1
# df11_capi_gpu_tests run `df11 compress` from the build path they were built in.
mkdir -p /work/wt/batchn/build-cuda/cli && cp $D/new/df11 /work/wt/batchn/build-cuda/cli/df11
step() {  # skipped when it could run past the call's 600 s (the tar must come back)
  local name=$1 limit=$2 t0=$SECONDS
  shift 2
  if [ $((SECONDS + limit)) -gt 560 ]; then echo "$name: skipped" | tee -a "$O/summary.txt"; return; fi
  timeout "$limit" "$@" > "$O/$name.log" 2>&1
  echo "$name: rc=$? $((SECONDS - t0)) s" | tee -a "$O/summary.txt"
}
step cuda_tests 60 $D/new/df11_cuda_tests
step cuda_tests_f32 30 $D/f32/df11_cuda_tests --gtest_filter='CudaGemv.*'
step capi_gpu_tests 60 $D/new/df11_capi_gpu_tests
for round in 1 2; do
  for v in base new f32; do
    step bench_${v}_$round 45 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0
  done
done
for v in new f32; do
  step memcheck_$v 60 env DF11_CUDA_TEST_SMALL=1 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 $D/$v/df11_cuda_tests --gtest_filter='CudaGemv.*'
  step initcheck_$v 60 env DF11_CUDA_TEST_SMALL=1 compute-sanitizer --tool initcheck --error-exitcode 9 $D/$v/df11_cuda_tests --gtest_filter='CudaGemv.*'
done
for v in base new; do
  step ncu16_$v 60 ncu --clock-control none --kernel-name-base demangled --kernel-name regex:'fused_gemv_kernel<16' --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section LaunchStats \
    $D/$v/df11-cuda-bench --runs 1 --warmup 0 --model-blocks 0 --seed 1
done
cat $O/summary.txt
grep -E "PASSED|FAILED" $O/cuda_tests*.log $O/capi_gpu_tests.log | head
grep -H "ERROR SUMMARY" $O/memcheck_*.log $O/initcheck_*.log
for f in $O/bench_*.log; do echo "== $(basename $f)"; grep -E '^ +(1|2|4|8|16) ' $f | cut -c1-100; done
grep -hE "==PROF==|==ERROR|Duration|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|Executed Ipc A|L2 Cache Throughput|L1/TEX Cache Throughput" $O/ncu16_*.log | head -30
(cd $OUT && tar czf b.tgz b)
