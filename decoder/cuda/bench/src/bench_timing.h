// CUDA-event timing shared by the benchmarks (decode_benchmark.cpp, gemv_benchmark.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

#include "cuda_benchmark.h"  // TimingMs
#include "cuda_error.h"
#include "df11/status.h"

namespace df11::cuda::detail {

// A non-blocking stream that lives as long as the benchmark run.
class OwnedStream {
 public:
  OwnedStream() = default;
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  ~OwnedStream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  Status create() {
    return cuda_status(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                       "cudaStreamCreate");
  }
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// Runs `work` (which enqueues on `stream`) warmup + runs times and times the last `runs`
// with CUDA events around each: median, min and max in ms.
Result<TimingMs> time_runs(cudaStream_t stream, int warmup, int runs,
                           const std::function<Status()>& work);

}  // namespace df11::cuda::detail
