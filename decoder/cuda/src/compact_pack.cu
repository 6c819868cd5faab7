// BF16 -> the compact execution layout on the GPU (cuda_compact.h): a histogram kernel, a
// measure kernel (one warp per tile: its lanes' codeword bits, lane table and total), a scan of
// the totals on the host, and a pack kernel (one warp per tile: byte-plane bytes and codewords,
// the stream's words shared by two lanes ORed atomically). The per-lane arithmetic is
// compact_pack_core.h's, which the host emulation runs too.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "compact_pack_core.h"
#include "cuda_error.h"
#include "df11/cuda_compact.h"
#include "df11/exec_layout.h"
#include "df11/group.h"  // store_le64, load_le64

namespace df11::cuda {
namespace {

constexpr uint32_t kWarps = 8;

// Workspace layout: u64 counts[256], u32 codewords[256], u8 lengths[256], then per tile its
// lane table (34 bytes) and, 8-aligned, its bit total (u64).
struct CompactWs {
  uint64_t counts = 0, codewords = 0, lengths = 0, lane_tables = 0, totals = 0, bytes = 0;
};

CompactWs ws_layout(uint64_t tiles) {
  CompactWs w;
  w.counts = 0;
  w.codewords = 8 * kCompactSymbols;
  w.lengths = w.codewords + 4 * kCompactSymbols;
  w.lane_tables = w.lengths + kCompactSymbols;
  w.totals = (w.lane_tables + kCompactLaneTableBytes * tiles + 7) / 8 * 8;
  w.bytes = w.totals + 8 * tiles;
  return w;
}

detail::CompactSource source(const uint16_t* w, const CompactGeometry& g) {
  return detail::CompactSource{
      w, g.exec.rows, g.exec.cols, g.exec.steps, g.exec.tiles_per_strip, g.exec.tiles};
}

uint32_t grid_for(uint64_t tiles) {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    sms = 1;
  }
  const uint64_t blocks = (tiles + kWarps - 1) / kWarps;
  return static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(blocks, 8ull * sms)));
}

__global__ void histogram_kernel(const uint16_t* w, uint64_t n, unsigned long long* counts) {
  __shared__ uint32_t local[kCompactSymbols];
  for (uint32_t i = threadIdx.x; i < kCompactSymbols; i += blockDim.x) local[i] = 0;
  __syncthreads();
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * blockDim.x) {
    atomicAdd(&local[(w[i] >> 7) & 0xFF], 1u);
  }
  __syncthreads();
  for (uint32_t i = threadIdx.x; i < kCompactSymbols; i += blockDim.x) {
    if (local[i] != 0) atomicAdd(&counts[i], static_cast<unsigned long long>(local[i]));
  }
}

__global__ void __launch_bounds__(kWarps * 32)
    measure_kernel(detail::CompactSource s, const uint8_t* lengths_g, uint8_t* lane_tables,
                   uint64_t* totals) {
  __shared__ uint8_t lengths[kCompactSymbols];
  for (uint32_t i = threadIdx.x; i < kCompactSymbols; i += blockDim.x) lengths[i] = lengths_g[i];
  __syncthreads();
  const uint32_t lane = threadIdx.x % 32;
  for (uint64_t t = uint64_t{blockIdx.x} * kWarps + threadIdx.x / 32; t < s.tiles;
       t += uint64_t{gridDim.x} * kWarps) {
    const uint32_t n = detail::compact_lane_code_bits(s, lengths, t, lane);
    uint32_t lo = n, hi = n;
    for (uint32_t o = 16; o > 0; o >>= 1) {
      lo = min(lo, __shfl_xor_sync(0xFFFFFFFFu, lo, o));
      hi = max(hi, __shfl_xor_sync(0xFFFFFFFFu, hi, o));
    }
    const uint32_t base = detail::compact_lane_base_of(lo, hi);
    const uint32_t bits = max(n, base);
    uint64_t sum = bits;
    for (uint32_t o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, o);
    uint8_t* lt = lane_tables + kCompactLaneTableBytes * t;
    lt[2 + lane] = static_cast<uint8_t>(bits - base);
    if (lane == 0) {
      lt[0] = static_cast<uint8_t>(base);
      lt[1] = static_cast<uint8_t>(base >> 8);
      totals[t] = sum;
    }
  }
}

__global__ void __launch_bounds__(kWarps * 32)
    pack_kernel(detail::CompactSource s, const uint32_t* codewords_g, const uint8_t* lengths_g,
                uint8_t* blob, uint64_t tile_bits, uint64_t lane_tables, uint64_t byte_plane,
                uint32_t* stream_words) {
  __shared__ uint32_t codewords[kCompactSymbols];
  __shared__ uint8_t lengths[kCompactSymbols];
  for (uint32_t i = threadIdx.x; i < kCompactSymbols; i += blockDim.x) {
    codewords[i] = codewords_g[i];
    lengths[i] = lengths_g[i];
  }
  __syncthreads();
  const uint32_t lane = threadIdx.x % 32;
  for (uint64_t t = uint64_t{blockIdx.x} * kWarps + threadIdx.x / 32; t < s.tiles;
       t += uint64_t{gridDim.x} * kWarps) {
    const uint8_t* lt = blob + lane_tables + kCompactLaneTableBytes * t;
    const uint32_t base = lt[0] | uint32_t{lt[1]} << 8;
    const uint32_t delta = lt[2 + lane];
    uint32_t inclusive = delta;
    for (uint32_t o = 1; o < 32; o <<= 1) {
      const uint32_t v = __shfl_up_sync(0xFFFFFFFFu, inclusive, o);
      if (lane >= o) inclusive += v;
    }
    const uint64_t start = detail::compact_load_u64(blob + tile_bits + 8 * t) +
                           uint64_t{lane} * base + (inclusive - delta);
    detail::compact_pack_lane(s, codewords, lengths, blob + byte_plane, t, lane, start,
                              [&](uint64_t k, uint32_t bits) {
                                if (bits != 0) atomicOr(stream_words + k, bits);
                              });
  }
}

Status bad_args(const std::string& what, const std::string& msg) {
  return Status(ErrorCode::kInvalidArgument, what + ": " + msg);
}

Status check_ws(void* d_ws, uint64_t have, uint64_t need, const std::string& what) {
  if (d_ws == nullptr || have < need || reinterpret_cast<uintptr_t>(d_ws) % 8 != 0) {
    return bad_args(what, "the workspace needs " + std::to_string(need) + " bytes, 8-byte aligned");
  }
  return Status::ok();
}

// The geometry of a rows x cols transcode whose weights and workspace are usable.
Result<CompactGeometry> checked(const uint16_t* d_w, uint32_t rows, uint32_t cols, void* d_ws,
                                uint64_t ws_bytes, const std::string& what) {
  DF11_ASSIGN_OR_RETURN(const CompactGeometry g, compact_geometry(rows, cols, what));
  DF11_RETURN_IF_ERROR(check_ws(d_ws, ws_bytes, ws_layout(g.exec.tiles).bytes, what));
  if (d_w == nullptr) return bad_args(what, "the weights are null");
  return g;
}

}  // namespace

Result<uint64_t> compact_workspace_bytes(uint32_t rows, uint32_t cols) {
  DF11_ASSIGN_OR_RETURN(const CompactGeometry g,
                        compact_geometry(rows, cols, "compact_workspace_bytes"));
  return ws_layout(g.exec.tiles).bytes;
}

Result<std::array<uint64_t, kCompactSymbols>> compact_histogram(const uint16_t* d_w, uint32_t rows,
                                                                uint32_t cols, void* d_workspace,
                                                                uint64_t workspace_bytes,
                                                                CUstream_st* stream) {
  DF11_ASSIGN_OR_RETURN(const CompactGeometry g, checked(d_w, rows, cols, d_workspace,
                                                         workspace_bytes, "compact_histogram"));
  auto* counts = static_cast<unsigned long long*>(d_workspace);
  DF11_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(counts, 0, 8 * kCompactSymbols, stream),
                            "cudaMemsetAsync");
  const uint64_t n = uint64_t{rows} * cols;
  histogram_kernel<<<grid_for((n + 4095) / 4096), kWarps * 32, 0, stream>>>(d_w, n, counts);
  DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "histogram kernel launch");
  std::array<uint64_t, kCompactSymbols> out{};
  DF11_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(out.data(), counts, 8 * kCompactSymbols, cudaMemcpyDeviceToHost, stream),
      "cudaMemcpyAsync");
  DF11_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  out[0] += g.exec.strips * g.exec.steps * kExecStepBytes - n;  // padding positions
  return out;
}

Result<CompactPlan> compact_measure(const uint16_t* d_w, uint32_t rows, uint32_t cols,
                                    std::span<const uint8_t, kCompactSymbols> lengths,
                                    void* d_workspace, uint64_t workspace_bytes,
                                    CUstream_st* stream) {
  const std::string what = "compact_measure";
  DF11_ASSIGN_OR_RETURN(const CompactGeometry g,
                        checked(d_w, rows, cols, d_workspace, workspace_bytes, what));
  const CompactWs ws = ws_layout(g.exec.tiles);
  CompactPlan plan;
  Result<CompactCode> code = compact_code(lengths, what);
  if (!code.is_ok()) return bad_args(what, code.status().message());
  plan.code = *code;
  plan.rows = rows;
  plan.cols = cols;
  // Every exponent of the matrix needs a codeword: the histogram says which occur.
  DF11_ASSIGN_OR_RETURN(const auto counts,
                        compact_histogram(d_w, rows, cols, d_workspace, workspace_bytes, stream));
  for (uint32_t e = 0; e < kCompactSymbols; ++e) {
    if (counts[e] != 0 && lengths[e] == 0) {
      return bad_args(what, "exponent " + std::to_string(e) + " has no code");
    }
  }
  auto* base = static_cast<uint8_t*>(d_workspace);
  DF11_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(base + ws.lengths, lengths.data(), kCompactSymbols,
                                            cudaMemcpyHostToDevice, stream),
                            "cudaMemcpyAsync");
  measure_kernel<<<grid_for(g.exec.tiles), kWarps * 32, 0, stream>>>(
      source(d_w, g), base + ws.lengths, base + ws.lane_tables,
      reinterpret_cast<uint64_t*>(base + ws.totals));
  DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "measure kernel launch");
  plan.prefix.assign(g.byte_plane, 0);
  std::vector<uint64_t> totals(g.exec.tiles);
  DF11_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(plan.prefix.data() + g.lane_tables, base + ws.lane_tables,
                      kCompactLaneTableBytes * g.exec.tiles, cudaMemcpyDeviceToHost, stream),
      "cudaMemcpyAsync");
  DF11_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(totals.data(), base + ws.totals, 8 * g.exec.tiles,
                                            cudaMemcpyDeviceToHost, stream),
                            "cudaMemcpyAsync");
  DF11_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  uint64_t at = 0;
  for (uint64_t t = 0; t < g.exec.tiles; ++t) {
    store_le64(plan.prefix.data() + g.tile_bits + 8 * t, at);
    at += totals[t];
  }
  store_le64(plan.prefix.data() + g.tile_bits + 8 * g.exec.tiles, at);
  std::copy(lengths.begin(), lengths.end(),
            plan.prefix.begin() + static_cast<ptrdiff_t>(g.lengths));
  plan.header.rows = rows;
  plan.header.cols = cols;
  plan.header.stream_bits = at;
  plan.header.total_bytes = g.total_bytes(at);
  write_compact_header(plan.header,
                       std::span<uint8_t, kCompactHeaderBytes>(plan.prefix.data(), 64));
  return plan;
}

Status launch_compact_pack(const uint16_t* d_w, const CompactPlan& plan, uint8_t* d_blob,
                           void* d_workspace, uint64_t workspace_bytes, CUstream_st* stream) {
  const std::string what = "launch_compact_pack";
  DF11_ASSIGN_OR_RETURN(const CompactGeometry g, compact_geometry(plan.rows, plan.cols, what));
  const CompactWs ws = ws_layout(g.exec.tiles);
  DF11_RETURN_IF_ERROR(check_ws(d_workspace, workspace_bytes, ws.bytes, what));
  if (d_w == nullptr || d_blob == nullptr || reinterpret_cast<uintptr_t>(d_blob) % 16 != 0) {
    return bad_args(what, "the weights or the blob are null, or the blob is not 16-byte aligned");
  }
  if (plan.prefix.size() != g.byte_plane) return bad_args(what, "the plan is not this shape's");
  auto* base = static_cast<uint8_t*>(d_workspace);
  DF11_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_blob, plan.prefix.data(), plan.prefix.size(),
                                            cudaMemcpyHostToDevice, stream),
                            "cudaMemcpyAsync");
  DF11_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(d_blob + g.byte_plane, 0, plan.header.total_bytes - g.byte_plane, stream),
      "cudaMemsetAsync");
  DF11_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(base + ws.codewords, plan.code.bits.data(),
                                            4 * kCompactSymbols, cudaMemcpyHostToDevice, stream),
                            "cudaMemcpyAsync");
  DF11_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(base + ws.lengths, plan.code.length.data(),
                                            kCompactSymbols, cudaMemcpyHostToDevice, stream),
                            "cudaMemcpyAsync");
  // The host buffers above must outlive their copies: wait for them, once.
  DF11_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  pack_kernel<<<grid_for(g.exec.tiles), kWarps * 32, 0, stream>>>(
      source(d_w, g), reinterpret_cast<const uint32_t*>(base + ws.codewords), base + ws.lengths,
      d_blob, g.tile_bits, g.lane_tables, g.byte_plane,
      reinterpret_cast<uint32_t*>(d_blob + g.stream));
  DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "pack kernel launch");
  return Status::ok();
}

Status upload_compact_decode_table(const CompactCode& code, uint32_t* d_table,
                                   CUstream_st* stream) {
  if (d_table == nullptr || reinterpret_cast<uintptr_t>(d_table) % 16 != 0) {
    return Status(ErrorCode::kInvalidArgument,
                  "upload_compact_decode_table: the table is null or not 16-byte aligned");
  }
  const std::vector<uint32_t> table = compact_decode_table(code);
  DF11_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(d_table, table.data(), 4 * table.size(), cudaMemcpyHostToDevice, stream),
      "cudaMemcpyAsync");
  DF11_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return Status::ok();
}

Result<uint32_t> read_compact_status(const uint32_t* d_status, CUstream_st* stream) {
  if (d_status == nullptr) {
    return Status(ErrorCode::kInvalidArgument, "read_compact_status: null status");
  }
  uint32_t word = 0;
  DF11_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&word, d_status, sizeof word, cudaMemcpyDeviceToHost, stream),
      "cudaMemcpyAsync");
  DF11_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return word;
}

}  // namespace df11::cuda
