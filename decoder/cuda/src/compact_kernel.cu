// The compact execution layout -> BF16 on the GPU (cuda_compact.h): one warp per tile, 8 warps
// per thread block, the decode table staged in shared memory (16 KB), and each tile's stream
// words too (up to half of kCompactStageWords, copied by the warp with cp.async while it
// decodes the tile before, with the head of the tile after that: compact_walk_tiles), so that
// a lane's refills wait on shared memory rather than on the blob; each lane's arithmetic is
// compact_core.h's, which the host emulation runs too.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "compact_core.h"
#include "compact_launch.h"
#include "cuda_error.h"
#include "df11/cuda_compact.h"

namespace df11::cuda {
namespace {

constexpr uint32_t kWarps = 8;
// How each warp stages its tiles' stream words, as in compact_gemm.cu: 2 (the default, by
// measurement) copies the next tile's words and the head of the one after while a tile is
// decoded; 1 the next tile's words only; 0 stages each tile at its start.
#ifndef DF11_COMPACT_PREFETCH
#define DF11_COMPACT_PREFETCH -1
#endif
constexpr int kPrefetch = DF11_COMPACT_PREFETCH >= 0 ? DF11_COMPACT_PREFETCH : 2;

__global__ void __launch_bounds__(kWarps * 32)
    compact_to_bf16_kernel(detail::CompactView v, uint32_t* status) {
  __shared__ uint32_t table[1u << kCompactMaxCodeBits];
  __shared__ uint32_t stage[kWarps][detail::kCompactStageSpan];
  for (uint32_t i = threadIdx.x; i < (1u << kCompactMaxCodeBits); i += blockDim.x) {
    table[i] = __ldg(v.table + i);
  }
  __syncthreads();
  v.table = table;
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  bool ok = true;
  const uint64_t t0 = uint64_t{blockIdx.x} * kWarps + warp;
  const uint64_t stride = uint64_t{gridDim.x} * kWarps;
  const auto body = [&](uint64_t t, const detail::CompactRun& r, const auto& words, uint32_t pos0) {
    ok &= detail::compact_decode_lane(v, t, lane, r, words, pos0);
  };
  if constexpr (kPrefetch == 2) {
    __shared__ uint32_t heads[kWarps][2 * detail::kCompactHeadWords];
    detail::compact_walk_tiles(v, t0, v.tiles, stride, lane, stage[warp], heads[warp], body);
  } else if constexpr (kPrefetch == 1) {
    detail::compact_walk_tiles_words(v, t0, v.tiles, stride, lane, stage[warp], body);
  } else {
    for (uint64_t t = t0; t < v.tiles; t += stride) {
      uint64_t first = 0;
      uint32_t n = 0;
      const bool staged = detail::compact_stage_tile(v, t, lane, stage[warp], &first, &n);
      detail::compact_with_lane_words(v, t, lane, detail::compact_lane_before(v, t, lane), staged,
                                      first, n,
                                      [&](const detail::CompactRun& r, const auto& words,
                                          uint32_t pos0) { body(t, r, words, pos0); });
    }
  }
  if (!ok) atomicOr(status, 1u);
}

}  // namespace

Status launch_compact_to_bf16(const CompactMatrix& m, uint16_t* d_out, uint32_t* d_status,
                              CUstream_st* stream) {
  const std::string what = "launch_compact_to_bf16";
  if (d_out == nullptr || d_status == nullptr) {
    return Status(ErrorCode::kInvalidArgument, what + ": a pointer is null");
  }
  DF11_ASSIGN_OR_RETURN(const CompactGeometry g, compact_geometry(m.rows, m.cols, what));
  DF11_ASSIGN_OR_RETURN(const detail::CompactView v,
                        detail::compact_launch_view(m, g, d_out, what));
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
