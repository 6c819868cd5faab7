// CUDA-event timing shared by the benchmarks (benchmark.cpp, gemv_benchmark.cpp).
#pragma once

#include <functional>

#include <cuda_runtime_api.h>

#include "cuda_benchmark.h"  // TimingMs
#include "df11/status.h"

namespace df11::cuda::detail {

// Runs `work` (which enqueues on `stream`) warmup + runs times and times the last `runs`
// with CUDA events around each: median, min and max in ms.
Result<TimingMs> time_runs(cudaStream_t stream, int warmup, int runs,
                           const std::function<Status()>& work);

}  // namespace df11::cuda::detail
