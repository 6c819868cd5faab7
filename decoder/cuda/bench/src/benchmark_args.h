// Argument checks shared by the per-group GPU benchmarks (gemv_benchmark.cpp,
// exec_benchmark.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cuda_gemv_benchmark.h"
#include "df11/group.h"
#include "df11/status.h"

namespace df11::cuda::detail {

// runs >= 1, warmup >= 0, shapes and weights that tile the group, batches within 1..16.
inline Status check_group_benchmark(const GroupView& g, std::span<const uint16_t> weights,
                                    std::span<const GemvBenchmarkShape> shapes, int runs,
                                    int warmup, std::span<const uint32_t> batches,
                                    const std::string& what) {
  uint64_t tiled = 0;
  for (const GemvBenchmarkShape& m : shapes) tiled += uint64_t{m.rows} * m.cols;
  if (runs < 1 || warmup < 0 || shapes.empty() || tiled != g.n_elements() ||
      weights.size() != g.n_elements()) {
    return Status(
        ErrorCode::kInvalidArgument,
        what + ": need runs >= 1, warmup >= 0, and shapes and weights that tile the group");
  }
  for (const uint32_t n : batches) {
    if (n < 1 || n > 16) {
      return Status(ErrorCode::kInvalidArgument,
                    what + ": batch " + std::to_string(n) + " is not within 1..16");
    }
  }
  return Status::ok();
}

}  // namespace df11::cuda::detail
