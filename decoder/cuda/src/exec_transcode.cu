// Transcoding into the execution layout on the GPU (include/df11/cuda_exec.h): BF16 in device
// memory -> blobs byte-identical to the CPU reference encoder (spec/EXEC_LAYOUT.md 4), and a
// DF11 group -> its members' blobs through one BF16 scratch copy of the group alone.
//
// Measure: exponent histograms (per-warp shared-memory bins), the base (spec 4.1: the fullest
// window, the smallest base on a tie), each tile's exception count (one warp per tile), one
// exclusive scan per matrix; the bases and counts go to the host. Pack: one warp per tile
// writes its steps' byte-plane and code-plane parts and its exceptions at the scanned offsets.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cuda_error.h"
#include "df11/cuda_exec.h"
#include "exec_fragments.cuh"

namespace df11::cuda {
namespace detail {
namespace {

constexpr uint32_t kWarps = kExecWarps;
constexpr uint32_t kThreads = kExecThreads;
constexpr uint32_t kMaxMatrices = kExecMaxLaunchMatrices;
constexpr uint32_t kBins = 256;
// The histogram's grid: this many thread blocks per multiprocessor, shared by the matrices of
// a launch, so that every multiprocessor has work whatever the matrices' count.
constexpr uint32_t kHistBlocksPerSm = 4;

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

// Per matrix in the workspace: histogram (u64 [256]), result, tile counts then offsets
// (u32 [tiles + 1]).
struct MeasureResult {
  uint32_t base;
  uint32_t overflow;  // 1 if 2^32 or more exceptions
  unsigned long long n_exc;
};

struct SourceDesc {
  const uint16_t* w;
  uint32_t rows, cols;
  uint32_t steps, tiles_per_strip;
  bool vec;
  unsigned long long* hist;
  MeasureResult* result;
  uint32_t* offsets;  // [tiles + 1]: counts, then exclusive offsets
  uint64_t tiles;
  // Pack only:
  uint8_t* blob;
  uint64_t byte_plane, code_plane, exceptions;
};

struct TranscodeParams {
  uint32_t n;
  uint32_t begin[kMaxMatrices + 1];  // first tile of matrix i (count, pack)
  SourceDesc m[kMaxMatrices];
};

__device__ __forceinline__ uint32_t find_source(const TranscodeParams& p, uint32_t item) {
  return exec_find_item(p.begin, p.n, item);
}

// Exponent histogram of matrix blockIdx.y.
__global__ void __launch_bounds__(kThreads) hist_kernel(const __grid_constant__ TranscodeParams p) {
  __shared__ uint32_t bins[kWarps][kBins];
  const SourceDesc& m = p.m[blockIdx.y];
  const uint32_t warp = threadIdx.x / 32;
  for (uint32_t i = threadIdx.x; i < kWarps * kBins; i += kThreads) (&bins[0][0])[i] = 0;
  __syncthreads();
  const uint64_t n = uint64_t{m.rows} * m.cols;
  const uint64_t stride = uint64_t{gridDim.x} * kThreads;
  const uint64_t first = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  if (m.vec) {
    for (uint64_t i = first; i < n / 8; i += stride) {
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(m.w) + i);
      const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (uint32_t k = 0; k < 4; ++k) {
        atomicAdd(&bins[warp][(words[k] >> 7) & 0xFF], 1u);
        atomicAdd(&bins[warp][(words[k] >> 23) & 0xFF], 1u);
      }
    }
    for (uint64_t i = n / 8 * 8 + first; i < n; i += stride) {
      atomicAdd(&bins[warp][(__ldg(m.w + i) >> 7) & 0xFF], 1u);
    }
  } else {
    for (uint64_t i = first; i < n; i += stride) {
      atomicAdd(&bins[warp][(__ldg(m.w + i) >> 7) & 0xFF], 1u);
    }
  }
  __syncthreads();
  for (uint32_t b = threadIdx.x; b < kBins; b += kThreads) {
    uint64_t sum = 0;
    for (uint32_t w = 0; w < kWarps; ++w) sum += bins[w][b];
    if (sum != 0) atomicAdd(&m.hist[b], static_cast<unsigned long long>(sum));
  }
}

// The base of matrix blockIdx.x (spec 4.1), 256 threads.
__global__ void __launch_bounds__(kBins) base_kernel(const __grid_constant__ TranscodeParams p) {
  __shared__ unsigned long long key[kBins];
  const SourceDesc& m = p.m[blockIdx.x];
  const uint32_t b = threadIdx.x;
  unsigned long long k = 0;
  if (b <= kExecMaxBase) {
    uint64_t sum = 0;
    for (uint32_t i = 0; i < kExecWindow; ++i) sum += m.hist[b + i];
    k = static_cast<unsigned long long>(sum << 8 | (255 - b));  // ties: the smallest base
  }
  key[b] = k;
  __syncthreads();
  for (uint32_t d = kBins / 2; d >= 1; d /= 2) {
    if (b < d) key[b] = max(key[b], key[b + d]);
    __syncthreads();
  }
  if (b == 0) m.result->base = 255 - static_cast<uint32_t>(key[0] & 0xFF);
}

// The lane's 16 weights of one step as pair words (zero past the matrix).
__device__ __forceinline__ void source_lane(const SourceDesc& m, uint64_t strip, uint64_t q,
                                            uint32_t lane, uint32_t (&pg)[4], uint32_t (&pg8)[4]) {
  const uint64_t c = q * kExecStepCols + 8 * (lane % 4);
  const uint64_t r = strip * kExecStripRows + lane / 4;
  bf16_row8(m.w, m.rows, m.cols, r, c, m.vec, pg);
  bf16_row8(m.w, m.rows, m.cols, r + 8, c, m.vec, pg8);
}

// Codes of the lane's 16 slots (spec 2.5; padding 0) and the mask of its exceptions.
struct LaneCoding {
  uint32_t bytes[4];  // byte plane, slots 4w..4w+3
  uint32_t exps[4];   // exponents, slots 4w..4w+3
  uint2 codes;
  uint32_t exc_mask;
};
__device__ __forceinline__ LaneCoding code_lane(const SourceDesc& m, uint64_t strip, uint64_t q,
                                                uint32_t lane, uint32_t base) {
  uint32_t pg[4], pg8[4];
  source_lane(m, strip, q, lane, pg, pg8);
  LaneCoding lc{};
  uint32_t code[16];
  const uint64_t c = q * kExecStepCols + 8 * (lane % 4);
  const uint64_t r = strip * kExecStripRows + lane / 4;
#pragma unroll
  for (uint32_t w = 0; w < 4; ++w) {
    const uint32_t(&src)[4] = w < 2 ? pg : pg8;
    const uint32_t p0 = __funnelshift_l(src[(w % 2) * 2], src[(w % 2) * 2], 1);
    const uint32_t p1 = __funnelshift_l(src[(w % 2) * 2 + 1], src[(w % 2) * 2 + 1], 1);
    lc.bytes[w] = __byte_perm(p0, p1, 0x6420);
    lc.exps[w] = __byte_perm(p0, p1, 0x7531);
#pragma unroll
    for (uint32_t b = 0; b < 4; ++b) {
      const uint32_t j = 4 * w + b;
      const bool pad = r + 8 * (j / 8) >= m.rows || c + j % 8 >= m.cols;
      const uint32_t e = (lc.exps[w] >> (8 * b)) & 0xFF;
      uint32_t k = e - base < kExecWindow ? e - base : kExecExceptionCode;
      if (pad) k = 0;
      code[j] = k;
      if (k == kExecExceptionCode) lc.exc_mask |= 1u << j;
    }
  }
  uint32_t cw[2] = {0, 0};
#pragma unroll
  for (uint32_t j = 0; j < 16; ++j) cw[j / 8] |= code[j] << (8 * (j % 4) + 4 * ((j / 4) % 2));
  lc.codes = make_uint2(cw[0], cw[1]);
  return lc;
}

// Exceptions of each tile (one warp per tile).
__global__ void __launch_bounds__(kThreads)
    count_kernel(const __grid_constant__ TranscodeParams p) {
  const uint32_t item = blockIdx.x * kWarps + threadIdx.x / 32;
  if (item >= p.begin[p.n]) return;
  const uint32_t mi = find_source(p, item);
  const SourceDesc& m = p.m[mi];
  const uint32_t lane = threadIdx.x % 32;
  const ExecTileItem ti = exec_tile_item(item - p.begin[mi], m.tiles_per_strip, m.steps);
  const uint64_t tile = ti.tile, strip = ti.strip;
  const uint32_t q0 = ti.q0, q1 = ti.q1;
  const uint32_t base = m.result->base;
  uint32_t n = 0;
  for (uint32_t q = q0; q < q1; ++q) n += __popc(code_lane(m, strip, q, lane, base).exc_mask);
#pragma unroll
  for (uint32_t d = 16; d >= 1; d /= 2) n += __shfl_xor_sync(kExecFullMask, n, d);
  if (lane == 0) m.offsets[tile] = n;
}

// Exclusive scan of matrix blockIdx.x's tile counts into offsets [tiles + 1] (1024 threads).
__global__ void __launch_bounds__(1024) scan_kernel(const __grid_constant__ TranscodeParams p) {
  __shared__ unsigned long long part[1024];
  __shared__ unsigned long long carry;
  const SourceDesc& m = p.m[blockIdx.x];
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (uint64_t at = 0; at < m.tiles; at += 1024) {
    const uint64_t i = at + threadIdx.x;
    const unsigned long long v = i < m.tiles ? m.offsets[i] : 0;
    part[threadIdx.x] = v;
    __syncthreads();
    for (uint32_t d = 1; d < 1024; d *= 2) {  // inclusive Hillis-Steele scan
      const unsigned long long add = threadIdx.x >= d ? part[threadIdx.x - d] : 0;
      __syncthreads();
      part[threadIdx.x] += add;
      __syncthreads();
    }
    const unsigned long long before = carry + part[threadIdx.x] - v;
    if (i < m.tiles) m.offsets[i] = static_cast<uint32_t>(before);
    __syncthreads();
    if (threadIdx.x == 1023) carry += part[1023];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    m.offsets[m.tiles] = static_cast<uint32_t>(carry);
    m.result->n_exc = carry;
    m.result->overflow = carry > UINT32_MAX ? 1 : 0;
  }
}

// Writes the blobs: one warp per tile; the warp of a matrix's tile 0 also writes the header,
// the padding after the tile offsets and after the exceptions.
__global__ void __launch_bounds__(kThreads) pack_kernel(const __grid_constant__ TranscodeParams p) {
  const uint32_t item = blockIdx.x * kWarps + threadIdx.x / 32;
  if (item >= p.begin[p.n]) return;
  const uint32_t mi = find_source(p, item);
  const SourceDesc& m = p.m[mi];
  const uint32_t lane = threadIdx.x % 32;
  const ExecTileItem ti = exec_tile_item(item - p.begin[mi], m.tiles_per_strip, m.steps);
  const uint64_t tile = ti.tile, strip = ti.strip;
  const uint32_t q0 = ti.q0, q1 = ti.q1;
  // The base and count exec_measure left in the workspace (spec 2.2 for the total).
  const uint32_t base = min(m.result->base, kExecMaxBase);
  const uint64_t n_exc = min(m.result->n_exc, static_cast<unsigned long long>(UINT32_MAX));
  const uint64_t total_bytes = (m.exceptions + n_exc + 15) / 16 * 16;
  uint32_t* offs = reinterpret_cast<uint32_t*>(m.blob + kExecHeaderBytes);
  if (lane == 0) {
    offs[tile] = m.offsets[tile];
    if (tile + 1 == m.tiles) offs[m.tiles] = m.offsets[m.tiles];
  }
  if (tile == 0) {
    // Header (spec 2.1), bytes 0..63, 2 per lane; little-endian fields, the rest 0.
    uint8_t h[2] = {0, 0};
    for (uint32_t k = 0; k < 2; ++k) {
      const uint32_t at = 2 * lane + k;
      uint32_t v = 0;
      if (at < kExecVersionOffset)
        v = kExecMagic >> (8 * (at - kExecMagicOffset));
      else if (at == kExecVersionOffset)
        v = kExecVersion;
      else if (at == kExecHeaderBytesOffset)
        v = kExecHeaderBytes;
      else if (at >= kExecRowsOffset && at < kExecColsOffset)
        v = m.rows >> (8 * (at - kExecRowsOffset));
      else if (at >= kExecColsOffset && at < kExecBaseOffset)
        v = m.cols >> (8 * (at - kExecColsOffset));
      else if (at == kExecBaseOffset)
        v = base;
      else if (at == kExecCodeBitsOffset)
        v = kExecCodeBits;
      else if (at >= kExecNExceptionsOffset && at < kExecTotalBytesOffset)
        v = static_cast<uint32_t>(n_exc >> (8 * (at - kExecNExceptionsOffset)));
      else if (at >= kExecTotalBytesOffset && at < kExecHeaderFieldsEnd)
        v = static_cast<uint32_t>(total_bytes >> (8 * (at - kExecTotalBytesOffset)));
      h[k] = static_cast<uint8_t>(v);
    }
    m.blob[2 * lane] = h[0];
    m.blob[2 * lane + 1] = h[1];
    for (uint64_t i = kExecHeaderBytes + 4 * (m.tiles + 1) + lane; i < m.byte_plane; i += 32) {
      m.blob[i] = 0;
    }
    for (uint64_t i = m.exceptions + n_exc + lane; i < total_bytes; i += 32) m.blob[i] = 0;
  }
  uint64_t cursor = m.offsets[tile];
  for (uint32_t q = q0; q < q1; ++q) {
    const LaneCoding lc = code_lane(m, strip, q, lane, base);
    const uint64_t li = (strip * m.steps + q) * kExecLanes + lane;
    reinterpret_cast<uint4*>(m.blob + m.byte_plane)[li] =
        make_uint4(lc.bytes[0], lc.bytes[1], lc.bytes[2], lc.bytes[3]);
    reinterpret_cast<uint2*>(m.blob + m.code_plane)[li] = lc.codes;
    if (!__any_sync(kExecFullMask, lc.exc_mask != 0)) continue;
    const uint32_t mine = __popc(lc.exc_mask);
    uint32_t incl = mine;
#pragma unroll
    for (uint32_t d = 1; d < 32; d *= 2) {
      const uint32_t v = __shfl_up_sync(kExecFullMask, incl, d);
      if (lane >= d) incl += v;
    }
    uint64_t at = cursor + incl - mine;
    for (uint32_t j = 0; j < 16; ++j) {
      if ((lc.exc_mask >> j) & 1u) {
        if (at < n_exc) m.blob[m.exceptions + at] = (lc.exps[j / 4] >> (8 * (j % 4))) & 0xFF;
        ++at;
      }
    }
    cursor += __shfl_sync(kExecFullMask, incl, 31);
  }
}

// Workspace layout of a transcode of these shapes.
struct Layout {
  std::vector<uint64_t> hist, result, offsets;  // per matrix, byte offsets
  std::vector<ExecGeometry> geo;
  uint64_t bytes = 0;
};

Result<Layout> layout_for(std::span<const ExecShape> shapes, const char* what) {
  Layout l;
  for (size_t i = 0; i < shapes.size(); ++i) {
    DF11_ASSIGN_OR_RETURN(ExecGeometry g,
                          exec_geometry(shapes[i].rows, shapes[i].cols,
                                        std::string(what) + ": matrix " + std::to_string(i)));
    l.hist.push_back(l.bytes);
    l.result.push_back(l.bytes + kBins * 8);
    l.offsets.push_back(l.bytes + kBins * 8 + sizeof(MeasureResult));
    l.bytes = round_up(l.offsets.back() + 4 * (g.tiles + 1), 256);
    l.geo.push_back(g);
  }
  return l;
}

std::vector<ExecShape> shapes_of(std::span<const ExecSource> sources) {
  std::vector<ExecShape> s;
  for (const ExecSource& src : sources) s.push_back({src.rows, src.cols});
  return s;
}

Status check_sources(std::span<const ExecSource> sources, const Layout& l, void* d_ws,
                     size_t ws_bytes, const char* what) {
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].d_w == nullptr) {
      return Status(ErrorCode::kInvalidArgument,
                    std::string(what) + ": matrix " + std::to_string(i) + ": d_w is null");
    }
  }
  if (d_ws == nullptr || ws_bytes < l.bytes || reinterpret_cast<uintptr_t>(d_ws) % 16 != 0) {
    return Status(ErrorCode::kInvalidArgument,
                  std::string(what) + ": workspace of " + std::to_string(ws_bytes) +
                      " bytes (16-byte aligned), the transcode needs " + std::to_string(l.bytes));
  }
  return Status::ok();
}

// Fills the descriptors of sources [at, at + n) and their tile prefix.
void describe(std::span<const ExecSource> sources, const Layout& l, uint8_t* ws, size_t at,
              size_t n, TranscodeParams& p) {
  p.n = static_cast<uint32_t>(n);
  uint64_t tiles = 0;
  for (size_t i = 0; i < n; ++i) {
    const ExecSource& s = sources[at + i];
    const ExecGeometry& g = l.geo[at + i];
    SourceDesc& d = p.m[i];
    d = SourceDesc{};
    d.w = s.d_w;
    d.rows = s.rows;
    d.cols = s.cols;
    d.steps = static_cast<uint32_t>(g.steps);
    d.tiles_per_strip = static_cast<uint32_t>(g.tiles_per_strip);
    d.vec = reinterpret_cast<uintptr_t>(s.d_w) % 16 == 0 && s.cols % 8 == 0;
    d.hist = reinterpret_cast<unsigned long long*>(ws + l.hist[at + i]);
    d.result = reinterpret_cast<MeasureResult*>(ws + l.result[at + i]);
    d.offsets = reinterpret_cast<uint32_t*>(ws + l.offsets[at + i]);
    d.tiles = g.tiles;
    d.byte_plane = g.byte_plane;
    d.code_plane = g.code_plane;
    d.exceptions = g.exceptions;
    p.begin[i] = static_cast<uint32_t>(tiles);
    tiles += g.tiles;
  }
  p.begin[n] = static_cast<uint32_t>(tiles);
}

uint32_t warp_blocks(const TranscodeParams& p) { return (p.begin[p.n] + kWarps - 1) / kWarps; }

Status check_tiles(std::span<const ExecSource> sources, const Layout& l) {
  for (size_t at = 0; at < sources.size(); at += kMaxMatrices) {
    uint64_t tiles = 0;
    for (size_t i = at; i < std::min<size_t>(at + kMaxMatrices, sources.size()); ++i) {
      tiles += l.geo[i].tiles;
    }
    if (tiles > UINT32_MAX - kWarps) {
      return Status(ErrorCode::kResourceLimit, "exec transcode: too many tiles in one launch");
    }
  }
  return Status::ok();
}

}  // namespace
}  // namespace detail

Result<size_t> exec_transcode_workspace_bytes(std::span<const ExecSource> sources) {
  DF11_ASSIGN_OR_RETURN(
      const detail::Layout l,
      detail::layout_for(detail::shapes_of(sources), "exec_transcode_workspace_bytes"));
  return static_cast<size_t>(std::max<uint64_t>(l.bytes, 16));
}

Status exec_measure(std::span<const ExecSource> sources, void* d_workspace, size_t workspace_bytes,
                    CUstream_st* stream, std::span<ExecMeasure> out) {
  using namespace detail;
  DF11_ASSIGN_OR_RETURN(const Layout l, layout_for(shapes_of(sources), "exec_measure"));
  DF11_RETURN_IF_ERROR(check_sources(sources, l, d_workspace, workspace_bytes, "exec_measure"));
  DF11_RETURN_IF_ERROR(check_tiles(sources, l));
  if (out.size() != sources.size()) {
    return Status(ErrorCode::kInvalidArgument, "exec_measure: one result per source");
  }
  if (sources.empty()) return Status::ok();
  auto* ws = static_cast<uint8_t*>(d_workspace);
  DF11_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(ws, 0, l.bytes, stream), "exec_measure: memset");
  auto p = std::make_unique<TranscodeParams>();
  int device = 0;
  int sms = 0;
  DF11_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "exec_measure: cudaGetDevice");
  DF11_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                            "exec_measure: multiprocessor count");
  for (size_t at = 0; at < sources.size(); at += kMaxMatrices) {
    const size_t n = std::min<size_t>(kMaxMatrices, sources.size() - at);
    describe(sources, l, ws, at, n, *p);
    const uint32_t per_matrix = std::max<uint32_t>(
        1, kHistBlocksPerSm * static_cast<uint32_t>(sms) / static_cast<uint32_t>(n));
    hist_kernel<<<dim3(per_matrix, static_cast<uint32_t>(n)), kThreads, 0, stream>>>(*p);
    base_kernel<<<static_cast<uint32_t>(n), kBins, 0, stream>>>(*p);
    if (p->begin[n] != 0) count_kernel<<<warp_blocks(*p), kThreads, 0, stream>>>(*p);
    scan_kernel<<<static_cast<uint32_t>(n), 1024, 0, stream>>>(*p);
    DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "exec_measure: kernel launch");
  }
  std::vector<MeasureResult> r(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    DF11_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&r[i], ws + l.result[i], sizeof(MeasureResult),
                                              cudaMemcpyDeviceToHost, stream),
                              "exec_measure: cudaMemcpyAsync");
  }
  DF11_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "exec_measure: sync");
  for (size_t i = 0; i < sources.size(); ++i) {
    if (r[i].overflow != 0) {
      return Status(ErrorCode::kUncodable, "exec_measure: matrix " + std::to_string(i) + ": " +
                                               std::to_string(r[i].n_exc) +
                                               " exceptions, the layout holds at most 2^32 - 1");
    }
    out[i].base = r[i].base;
    out[i].n_exceptions = static_cast<uint32_t>(r[i].n_exc);
    out[i].bytes = l.geo[i].total_bytes(r[i].n_exc);
  }
  return Status::ok();
}

Status launch_exec_pack(std::span<const ExecSource> sources, std::span<uint8_t* const> d_blobs,
                        void* d_workspace, size_t workspace_bytes, CUstream_st* stream) {
  using namespace detail;
  DF11_ASSIGN_OR_RETURN(const Layout l, layout_for(shapes_of(sources), "launch_exec_pack"));
  DF11_RETURN_IF_ERROR(check_sources(sources, l, d_workspace, workspace_bytes, "launch_exec_pack"));
  DF11_RETURN_IF_ERROR(check_tiles(sources, l));
  if (d_blobs.size() != sources.size()) {
    return Status(ErrorCode::kInvalidArgument, "launch_exec_pack: one blob per source");
  }
  for (size_t i = 0; i < d_blobs.size(); ++i) {
    if (d_blobs[i] == nullptr || reinterpret_cast<uintptr_t>(d_blobs[i]) % 16 != 0) {
      return Status(ErrorCode::kInvalidArgument, "launch_exec_pack: blob " + std::to_string(i) +
                                                     " is null or not 16-byte aligned");
    }
  }
  if (sources.empty()) return Status::ok();
  auto* ws = static_cast<uint8_t*>(d_workspace);
  auto p = std::make_unique<TranscodeParams>();
  for (size_t at = 0; at < sources.size(); at += kMaxMatrices) {
    const size_t n = std::min<size_t>(kMaxMatrices, sources.size() - at);
    describe(sources, l, ws, at, n, *p);
    for (size_t i = 0; i < n; ++i) p->m[i].blob = d_blobs[at + i];
    if (p->begin[n] == 0) continue;
    pack_kernel<<<warp_blocks(*p), kThreads, 0, stream>>>(*p);
    DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "launch_exec_pack: kernel launch");
  }
  return Status::ok();
}

}  // namespace df11::cuda
