// The compact execution layout -> BF16 on the GPU (cuda_compact.h): one warp per tile, 8 warps
// per thread block, the code's table staged in shared memory (8 KB); each lane's arithmetic is
// compact_core.h's, which the host emulation runs too.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "compact_core.h"
#include "cuda_error.h"
#include "df11/cuda_compact.h"

namespace df11::cuda {
namespace {

constexpr uint32_t kWarps = 8;

__global__ void __launch_bounds__(kWarps * 32)
    compact_to_bf16_kernel(detail::CompactView v, uint32_t* status) {
  __shared__ uint16_t table[1u << kCompactMaxCodeBits];
  for (uint32_t i = threadIdx.x; i < (1u << kCompactMaxCodeBits); i += blockDim.x) {
    table[i] = __ldg(v.table + i);
  }
  __syncthreads();
  v.table = table;
  const uint32_t lane = threadIdx.x % 32;
  bool ok = true;
  for (uint64_t t = uint64_t{blockIdx.x} * kWarps + threadIdx.x / 32; t < v.tiles;
       t += uint64_t{gridDim.x} * kWarps) {
    const uint32_t base = detail::compact_lane_base(v, t);
    const uint32_t delta = detail::compact_lane_delta(v, t, lane);
    uint32_t inclusive = delta;  // the deltas' inclusive prefix sum over the warp
    for (uint32_t o = 1; o < 32; o <<= 1) {
      const uint32_t n = __shfl_up_sync(0xFFFFFFFFu, inclusive, o);
      if (lane >= o) inclusive += n;
    }
    ok &= detail::compact_decode_lane(v, t, lane, uint64_t{lane} * base + (inclusive - delta));
  }
  if (!ok) atomicOr(status, 1u);
}

}  // namespace

Status launch_compact_to_bf16(const CompactMatrix& m, uint16_t* d_out, uint32_t* d_status,
                              CUstream_st* stream) {
  const std::string what = "launch_compact_to_bf16";
  if (m.d_blob == nullptr || m.d_table == nullptr || d_out == nullptr || d_status == nullptr) {
    return Status(ErrorCode::kInvalidArgument, what + ": a pointer is null");
  }
  DF11_ASSIGN_OR_RETURN(const CompactGeometry g, compact_geometry(m.rows, m.cols, what));
  CompactHeader h;
  h.rows = m.rows;
  h.cols = m.cols;
  h.stream_bits = m.stream_bits;
  const detail::CompactView v = detail::compact_view(g, h, m.d_blob, m.d_table, d_out);
  int device = 0, sms = 0;
  DF11_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "cudaGetDevice");
  DF11_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                            "cudaDeviceGetAttribute");
  const uint64_t blocks = (g.exec.tiles + kWarps - 1) / kWarps;
  const uint32_t grid = static_cast<uint32_t>(std::min<uint64_t>(blocks, uint64_t{8} * sms));
  compact_to_bf16_kernel<<<grid, kWarps * 32, 0, stream>>>(v, d_status);
  DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "compact kernel launch");
  return Status::ok();
}

}  // namespace df11::cuda
