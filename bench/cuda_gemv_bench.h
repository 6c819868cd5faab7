// The GEMV rows of df11-cuda-bench: cuBLAS, df11 decode + cuBLAS, the fused decode+GEMV
// kernel and the reference GEMV on the benchmark block at batch 1..16, plus the model line
// (cuda_gemv_bench.cpp). Prints its report; false (with a message on stderr) on any failure,
// including a fused output that differs from the reference.
#pragma once

#include <cstdint>
#include <iostream>

#include "bench_decode.h"

// Both benchmark files: on failure, print `what` and return false.
#define BENCH_CHECK(call, what)                 \
  do {                                          \
    if (!(call)) {                              \
      std::cerr << "error: " << (what) << "\n"; \
      return false;                             \
    }                                           \
  } while (0)

namespace df11::bench {

bool run_gemv_benchmark(const app::BenchWorkload& w, int warmup, int runs, uint32_t model_blocks);

}  // namespace df11::bench
