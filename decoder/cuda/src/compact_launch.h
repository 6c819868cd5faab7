// What the compact layout's launchers share (compact_kernel.cu, compact_gemm.cu): the view of a
// matrix, its pointers checked.
#pragma once

#include <cstdint>
#include <string>

#include "compact_core.h"
#include "df11/cuda_compact.h"

namespace df11::cuda::detail {

// The view of `m` (geometry g) writing to `out`; kInvalidArgument where its blob or table is
// null or the blob not 16-byte aligned.
inline Result<CompactView> compact_launch_view(const CompactMatrix& m, const CompactGeometry& g,
                                               uint16_t* out, const std::string& what) {
  if (m.d_blob == nullptr || m.d_table == nullptr) {
    return Status(ErrorCode::kInvalidArgument, what + ": the blob or its table is null");
  }
  if (reinterpret_cast<uintptr_t>(m.d_blob) % 16 != 0) {
    return Status(ErrorCode::kInvalidArgument, what + ": the blob is not 16-byte aligned");
  }
  CompactHeader h;
  h.rows = m.rows;
  h.cols = m.cols;
  h.stream_bits = m.stream_bits;
  return compact_view(g, h, m.d_blob, m.d_table, out);
}

}  // namespace df11::cuda::detail
