#!/usr/bin/env bash
# Third GPU session of the batchn helper: g7b (g7 with the batch-1 whole-chunk path calling
# fma_unit_batch1 directly again: the reference kernel's batch-1 SASS as on main; the fused
# kernels' SASS identical to g7's): all CUDA and C API GPU tests, then main (base) against
# g7b, two rounds interleaved.
set -u
D=$(cd "$(dirname "$0")" && pwd)
O=$OUT/d
mkdir -p $O
export LD_LIBRARY_PATH=$D/lib
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $O/gpu.txt 2>&1
mkdir -p /work/wt/batchn/build-cuda/cli && cp $D/g7b/df11 /work/wt/batchn/build-cuda/cli/df11
step() {
  local name=$1 limit=$2 t0=$SECONDS
  shift 2
  timeout "$limit" "$@" > "$O/$name.log" 2>&1
  echo "$name: rc=$? $((SECONDS - t0)) s" | tee -a "$O/summary.txt"
}
step cuda_tests 60 $D/g7b/df11_cuda_tests
step capi_gpu_tests 60 $D/g7b/df11_capi_gpu_tests
for round in 1 2; do
  for v in base g7b; do
    step bench_${v}_$round 45 $D/$v/df11-cuda-bench --runs 20 --warmup 5 --model-blocks 0
  done
done
grep -HE "PASSED|FAILED" $O/cuda_tests.log $O/capi_gpu_tests.log
for f in $O/bench_*.log; do echo "== $(basename $f)"; grep -E '^ +(1|2|4|8|16) ' $f | cut -c1-100; done
