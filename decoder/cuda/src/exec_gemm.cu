// Fused GEMM from the execution layout, its BF16 reference, and the layout -> BF16 decode
// (include/df11/cuda_exec.h; design and measurements in EXEC_KERNEL.md). The fragments and
// the order of the products live in exec_fragments.cuh, shared by all three.
//
// GEMM: one thread block of 8 warps per strip (16 rows); warp w takes the strip's tiles w,
// w + 8, ..., a few steps' loads in flight at a time, two products per step and n8 tile; the 8
// warp sums meet in shared memory and are added in warp order (spec 6). Blocks are ordered by
// decreasing columns, so that the long strips start first.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "cuda_error.h"
#include "df11/cuda_exec.h"
#include "exec_fragments.cuh"

namespace df11::cuda {
namespace detail {
namespace {

constexpr uint32_t kWarps = kExecWarps;  // the decode: one tile per warp
constexpr uint32_t kThreads = kExecThreads;
// The GEMM: warps per strip (spec 6: warp w takes tiles w, w + kGemmWarps, ...). This and the
// DF11_EXEC_GEMM_* settings below are overridable only for A/B builds of variants
// (EXEC_KERNEL.md); the defaults are what BENCHMARKS.md measured.
#ifndef DF11_EXEC_GEMM_WARPS
#define DF11_EXEC_GEMM_WARPS 8
#endif
constexpr uint32_t kGemmWarps = DF11_EXEC_GEMM_WARPS;
constexpr uint32_t kGemmThreads = 32 * kGemmWarps;
constexpr uint32_t kMaxMatrices = kExecMaxLaunchMatrices;
// Steps whose loads are issued together (the products' order does not depend on it), at batch
// 1-8 (one n8 tile) and 9-16 (two), and the thread blocks per multiprocessor each kernel is
// built for. Latency bounds the GEMM, so warps per multiprocessor count most: 3 blocks (24
// warps, 80 registers) with 4 steps of weights and X in flight at 1-8, with 2 steps at 9-16
// (with 4 they spill), measured faster than 2 blocks with 4 steps (EXEC_KERNEL.md, v6). A whole
// tile in flight needs X loaded step by step to fit the registers, which puts an L1 round trip
// before every step's products, and was 1.8x slower at batch 1-8 (v2). The decode has no X,
// so it loads a whole tile (6 KB per warp) with streaming loads and stores, which keeps more
// bytes in flight.
#ifndef DF11_EXEC_GEMM_STEPS1
#define DF11_EXEC_GEMM_STEPS1 4
#endif
#ifndef DF11_EXEC_GEMM_STEPS2
#define DF11_EXEC_GEMM_STEPS2 2
#endif
#ifndef DF11_EXEC_GEMM_MIN_BLOCKS
#define DF11_EXEC_GEMM_MIN_BLOCKS 3
#endif
#ifndef DF11_EXEC_GEMM_MIN_BLOCKS2
#define DF11_EXEC_GEMM_MIN_BLOCKS2 3
#endif
// Batch 17-32 (four n8 tiles): 2 steps in flight, 2 blocks per multiprocessor.
#ifndef DF11_EXEC_GEMM_STEPS4
#define DF11_EXEC_GEMM_STEPS4 2
#endif
#ifndef DF11_EXEC_GEMM_MIN_BLOCKS4
#define DF11_EXEC_GEMM_MIN_BLOCKS4 2
#endif
template <uint32_t NB>
constexpr uint32_t kGemmStepsInFlight = NB == 1   ? DF11_EXEC_GEMM_STEPS1
                                        : NB == 2 ? DF11_EXEC_GEMM_STEPS2
                                                  : DF11_EXEC_GEMM_STEPS4;
constexpr uint32_t kDecodeStepsInFlight = kExecTileSteps;

// One matrix of a launch, everything the kernels need (offsets from spec 2.2).
struct MatrixDesc {
  const uint8_t* blob;  // the blob (GEMM, decode), or BF16 W (reference GEMM)
  const uint16_t* x;    // GEMM: X [batch, cols]
  uint16_t* y;          // GEMM: Y [batch, rows]; decode: out [rows, cols]
  uint64_t byte_plane, code_plane, exceptions, tile_offsets;
  uint32_t rows, cols, n_exc;
  uint32_t steps, tiles_per_strip;
  uint32_t index;  // in the caller's list (status)
  bool x_vec, w_vec;
};

struct LaunchParams {
  ExecStatusRecord* status;
  uint32_t batch, n;
  uint32_t begin[kMaxMatrices + 1];  // GEMM: first block of matrix i; decode: first tile
  MatrixDesc m[kMaxMatrices];
};

__device__ __forceinline__ uint32_t find_matrix(const LaunchParams& p, uint32_t item) {
  return exec_find_item(p.begin, p.n, item);
}

// The blob's window base, clamped and reported if above Max_Base.
__device__ __forceinline__ uint32_t read_base(const LaunchParams& p, const MatrixDesc& m,
                                              uint64_t tile, bool report) {
  uint32_t base = __ldg(m.blob + kExecBaseOffset);
  if (base > kExecMaxBase) {
    if (report) exec_report(p.status, m.index, tile, kExecBadBase);
    base = kExecMaxBase;
  }
  return base;
}

// A tile's exception range [*cursor, *end), checked against the blob's count.
__device__ __forceinline__ void tile_range(const LaunchParams& p, const MatrixDesc& m,
                                           uint64_t tile, uint32_t lane, uint64_t* cursor,
                                           uint64_t* end) {
  const uint32_t* offs = reinterpret_cast<const uint32_t*>(m.blob + m.tile_offsets);
  uint64_t a = __ldg(offs + tile), b = __ldg(offs + tile + 1);
  if (b < a || b > m.n_exc) {
    if (lane == 0) exec_report(p.status, m.index, tile, kExecBadTileOffsets);
    a = min(a, uint64_t{m.n_exc});
    b = a;
  }
  *cursor = a;
  *end = b;
}

// One lane of one step of a blob: loads (kStreaming: evict-first, for the decode).
template <bool kStreaming>
__device__ __forceinline__ LaneCodes load_lane(const MatrixDesc& m, uint64_t strip, uint64_t q,
                                               uint32_t lane) {
  const uint64_t li = (strip * m.steps + q) * kExecLanes + lane;
  const auto* bytes = reinterpret_cast<const uint4*>(m.blob + m.byte_plane) + li;
  const auto* codes = reinterpret_cast<const uint2*>(m.blob + m.code_plane) + li;
  LaneCodes lc;
  if constexpr (kStreaming) {
    lc.bytes = __ldcs(bytes);
    lc.codes = __ldcs(codes);
  } else {
    lc.bytes = __ldg(bytes);
    lc.codes = __ldg(codes);
  }
  return lc;
}

// The lane's weights of one step from its loaded parts, exceptions resolved (warp-uniform
// call). *cursor advances past the step's exceptions; `overrun` is set if they pass `end`.
__device__ __forceinline__ LaneWeights decode_lane(const MatrixDesc& m, const LaneCodes& lc,
                                                   uint32_t base4, uint64_t* cursor, uint64_t end,
                                                   uint32_t lane, bool& overrun,
                                                   uint64_t win_at = 0, uint32_t win = 0,
                                                   uint32_t win_n = 0) {
  const LaneCodeBytes k = exec_split_codes(lc.codes);
  uint32_t e[4];
#pragma unroll
  for (uint32_t w = 0; w < 4; ++w) e[w] = exec_exponents(k.c[w], base4);
  if (__any_sync(kExecFullMask, exec_exception_flags(k) != 0)) {
    *cursor += exec_patch_exceptions(k, e, m.blob + m.exceptions, *cursor, end, lane, overrun,
                                     win_at, win, win_n);
  }
  return exec_build(lc.bytes, e);
}

// Thread blocks per multiprocessor a GEMM kernel is built for (the reference: its registers
// unbounded, for tests, not speed).
template <bool kExec, uint32_t NB>
constexpr uint32_t kGemmMinBlocks = !kExec    ? 1
                                    : NB == 1 ? DF11_EXEC_GEMM_MIN_BLOCKS
                                    : NB == 2 ? DF11_EXEC_GEMM_MIN_BLOCKS2
                                              : DF11_EXEC_GEMM_MIN_BLOCKS4;

template <bool kExec, uint32_t NB>
__global__ void __launch_bounds__(kGemmThreads, (kGemmMinBlocks<kExec, NB>))
    gemm_kernel(const __grid_constant__ LaunchParams p) {
  __shared__ float red[kGemmWarps][32][NB * 4];
  const uint32_t mi = find_matrix(p, blockIdx.x);
  const MatrixDesc& m = p.m[mi];
  const uint64_t strip = blockIdx.x - p.begin[mi];
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t g = lane / 4, t = lane % 4;
  const uint16_t* xrow[NB];
#pragma unroll
  for (uint32_t n = 0; n < NB; ++n) {
    // Rows of X past the batch compute into columns of Y nobody reads: any row will do.
    xrow[n] = m.x + uint64_t{min(8 * n + g, p.batch - 1)} * m.cols;
  }
  uint32_t base4 = 0;
  if constexpr (kExec) {
    base4 = read_base(p, m, strip * m.tiles_per_strip, threadIdx.x == 0) * 0x01010101u;
  }
  float acc[NB][4];
#pragma unroll
  for (uint32_t n = 0; n < NB; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
  // The strip's constants, once: the lane's first byte-plane and code-plane entries (a step
  // is 32 entries further), and the steps whose 32 columns all exist (only a later one, the
  // last, can be ragged; X's wide load needs no end test before it).
  const uint32_t cols = m.cols;
  const uint32_t full_steps = cols / kExecStepCols;
  const bool x_vec = m.x_vec;
  const uint4* lane_bytes = nullptr;
  const uint2* lane_codes = nullptr;
  if constexpr (kExec) {
    const uint64_t first = strip * m.steps * kExecLanes + lane;
    lane_bytes = reinterpret_cast<const uint4*>(m.blob + m.byte_plane) + first;
    lane_codes = reinterpret_cast<const uint2*>(m.blob + m.code_plane) + first;
  }

  for (uint32_t u = warp; u < m.tiles_per_strip; u += kGemmWarps) {
    const uint64_t tile = strip * m.tiles_per_strip + u;
    const uint32_t q0 = u * kExecTileSteps;
    const uint32_t q1 = min(q0 + kExecTileSteps, m.steps);
    uint64_t cursor = 0, end = 0, win_at = 0;
    uint32_t win = 0;
    bool overrun = false;
    for (uint32_t q = q0; q < q1; q += kGemmStepsInFlight<NB>) {
      LaneCodes lc[kGemmStepsInFlight<NB>];
      uint32_t wa[kGemmStepsInFlight<NB>][4],
          wb[kGemmStepsInFlight<NB>][4];  // reference: BF16 pairs
      uint4 xv[kGemmStepsInFlight<NB>][NB];
#pragma unroll
      for (uint32_t i = 0; i < kGemmStepsInFlight<NB>; ++i) {
        if (q + i >= q1) break;
        const uint32_t c = (q + i) * kExecStepCols + 8 * t;  // < cols + 32 <= 2^28 + 32
        if constexpr (kExec) {
          lc[i].bytes = __ldg(lane_bytes + (q + i) * kExecLanes);
          lc[i].codes = __ldg(lane_codes + (q + i) * kExecLanes);
        } else {
          const auto* w = reinterpret_cast<const uint16_t*>(m.blob);
          bf16_row8(w, m.rows, cols, strip * kExecStripRows + g, c, m.w_vec, wa[i]);
          bf16_row8(w, m.rows, cols, strip * kExecStripRows + 8 + g, c, m.w_vec, wb[i]);
        }
#pragma unroll
        for (uint32_t n = 0; n < NB; ++n) {
          xv[i][n] = x_vec && q + i < full_steps
                         ? __ldg(reinterpret_cast<const uint4*>(xrow[n] + c))
                         : exec_load_x(xrow[n], c, cols, x_vec);
        }
      }
      if constexpr (kExec) {
        if (q == q0) {
          // The tile's exception range, read after its first steps' loads are in flight (its
          // check waits for it), and its first four exception bytes, read ahead for the
          // steps that have one (0.73 per tile on average).
          tile_range(p, m, tile, lane, &cursor, &end);
          const uint8_t* exc = m.blob + m.exceptions;
          win_at = cursor;
#pragma unroll
          for (uint32_t k = 0; k < 4; ++k) {
            if (cursor + k < end) win |= uint32_t{__ldg(exc + cursor + k)} << (8 * k);
          }
        }
      }
#pragma unroll
      for (uint32_t i = 0; i < kGemmStepsInFlight<NB>; ++i) {
        if (q + i >= q1) break;
        LaneWeights lw;
        if constexpr (kExec) {
          lw = decode_lane(m, lc[i], base4, &cursor, end, lane, overrun, win_at, win, 4);
          if (q + i >= full_steps) {  // the ragged last step
            mask_columns(lw, (q + i) * kExecStepCols + 8 * t, cols);
          }
        } else {
#pragma unroll
          for (uint32_t k = 0; k < 4; ++k) {
            lw.pg[k] = wa[i][k];
            lw.pg8[k] = wb[i][k];
          }
        }
        step_products<NB>(lw, xv[i], acc);
      }
    }
    if constexpr (kExec) {
      if (lane == 0 && (overrun || cursor != end)) {
        exec_report(p.status, m.index, tile, kExecBadTileCount);
      }
    }
  }
  exec_strip_sums<NB, kGemmWarps>(red, acc, strip, m.rows, p.batch, m.y);
}

// Layout -> BF16: one warp per tile.
__global__ void __launch_bounds__(kThreads) decode_kernel(const __grid_constant__ LaunchParams p) {
  const uint32_t item = blockIdx.x * kWarps + threadIdx.x / 32;
  if (item >= p.begin[p.n]) return;
  const uint32_t mi = find_matrix(p, item);
  const MatrixDesc& m = p.m[mi];
  const uint32_t lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const ExecTileItem ti = exec_tile_item(item - p.begin[mi], m.tiles_per_strip, m.steps);
  const uint64_t tile = ti.tile, strip = ti.strip;
  const uint32_t q0 = ti.q0, q1 = ti.q1;
  const uint32_t base4 = read_base(p, m, tile, lane == 0) * 0x01010101u;
  uint64_t cursor = 0, end = 0;
  bool overrun = false;
  tile_range(p, m, tile, lane, &cursor, &end);
  for (uint32_t q = q0; q < q1; q += kDecodeStepsInFlight) {
    LaneCodes lc[kDecodeStepsInFlight];
#pragma unroll
    for (uint32_t i = 0; i < kDecodeStepsInFlight; ++i) {
      if (q + i < q1) lc[i] = load_lane<true>(m, strip, q + i, lane);
    }
#pragma unroll
    for (uint32_t i = 0; i < kDecodeStepsInFlight; ++i) {
      if (q + i >= q1) break;
      const LaneWeights lw = decode_lane(m, lc[i], base4, &cursor, end, lane, overrun);
      const uint64_t c = uint64_t{q + i} * kExecStepCols + 8 * t;
#pragma unroll
      for (uint32_t h = 0; h < 2; ++h) {
        const uint64_t r = strip * kExecStripRows + 8 * h + g;
        if (r >= m.rows) continue;
        const uint32_t(&pw)[4] = h == 0 ? lw.pg : lw.pg8;
        uint16_t* out = m.y + r * m.cols + c;
        if (m.w_vec && c + 8 <= m.cols) {
          __stcs(reinterpret_cast<uint4*>(out), make_uint4(pw[0], pw[1], pw[2], pw[3]));
          continue;
        }
#pragma unroll
        for (uint32_t k = 0; k < 8; ++k) {
          if (c + k < m.cols) out[k] = static_cast<uint16_t>(pw[k / 2] >> (16 * (k % 2)));
        }
      }
    }
  }
  if (lane == 0 && (overrun || cursor != end)) {
    exec_report(p.status, m.index, tile, kExecBadTileCount);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The geometry part of a descriptor (spec 2.2).
MatrixDesc describe(const ExecGeometry& geo, const uint8_t* blob, uint32_t index) {
  MatrixDesc d{};
  d.blob = blob;
  d.byte_plane = geo.byte_plane;
  d.code_plane = geo.code_plane;
  d.exceptions = geo.exceptions;
  d.tile_offsets = geo.tile_offsets;
  d.rows = geo.rows;
  d.cols = geo.cols;
  d.steps = static_cast<uint32_t>(geo.steps);
  d.tiles_per_strip = static_cast<uint32_t>(geo.tiles_per_strip);
  d.index = index;
  return d;
}

// The descriptor of a blob, its geometry checked against the bytes the caller declared.
Result<MatrixDesc> describe_blob(const ExecMatrix& w, uint32_t index, const std::string& what) {
  DF11_ASSIGN_OR_RETURN(const ExecGeometry geo, exec_geometry(w.rows, w.cols, what));
  if (w.d_blob == nullptr || !aligned16(w.d_blob)) {
    return Status(ErrorCode::kInvalidArgument, what + ": the blob is null or not 16-byte aligned");
  }
  if (w.n_exceptions > uint64_t{w.rows} * w.cols || w.bytes < geo.total_bytes(w.n_exceptions)) {
    return Status(ErrorCode::kInvalidArgument,
                  what + ": " + std::to_string(w.bytes) + " bytes for a blob of " +
                      std::to_string(geo.total_bytes(w.n_exceptions)) + " (" +
                      std::to_string(w.n_exceptions) + " exceptions)");
  }
  MatrixDesc d = describe(geo, w.d_blob, index);
  d.n_exc = w.n_exceptions;
  return d;
}

Status check_workspace(void* d_ws, size_t bytes, const char* what) {
  if (d_ws == nullptr || bytes < kExecStatusBytes || !aligned16(d_ws)) {
    return Status(ErrorCode::kInvalidArgument,
                  std::string(what) + ": the workspace needs 16 bytes, 16-byte aligned");
  }
  return Status::ok();
}

Status reset_status(void* d_ws, cudaStream_t stream) {
  DF11_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(d_ws, 0xFF, 8, stream), "exec status: memset");
  DF11_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(static_cast<uint8_t*>(d_ws) + 8, 0, 8, stream),
                            "exec status: memset");
  return Status::ok();
}

// GEMM launches over descriptors (any count), blocks ordered by decreasing columns.
template <bool kExec>
Status launch_gemms(std::vector<MatrixDesc> descs, uint32_t batch, ExecStatusRecord* status,
                    cudaStream_t stream) {
  std::stable_sort(descs.begin(), descs.end(),
                   [](const MatrixDesc& a, const MatrixDesc& b) { return a.cols > b.cols; });
  auto p = std::make_unique<LaunchParams>();
  p->status = status;
  p->batch = batch;
  for (size_t at = 0; at < descs.size(); at += kMaxMatrices) {
    const size_t n = std::min<size_t>(kMaxMatrices, descs.size() - at);
    p->n = static_cast<uint32_t>(n);
    uint64_t blocks = 0;
    for (size_t i = 0; i < n; ++i) {
      p->m[i] = descs[at + i];
      p->begin[i] = static_cast<uint32_t>(blocks);
      blocks += (uint64_t{descs[at + i].rows} + kExecStripRows - 1) / kExecStripRows;
    }
    if (blocks > INT32_MAX) {
      return Status(ErrorCode::kResourceLimit, "exec GEMM: too many rows in one launch");
    }
    p->begin[n] = static_cast<uint32_t>(blocks);
    const auto kernel = batch <= 8    ? gemm_kernel<kExec, 1>
                        : batch <= 16 ? gemm_kernel<kExec, 2>
                                      : gemm_kernel<kExec, 4>;
    kernel<<<static_cast<uint32_t>(blocks), kGemmThreads, 0, stream>>>(*p);
    DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "exec GEMM kernel launch");
  }
  return Status::ok();
}

Status check_batch(uint32_t batch, const char* what) {
  if (batch < 1 || batch > kExecMaxBatch) {
    return Status(ErrorCode::kInvalidArgument, std::string(what) + ": batch " +
                                                   std::to_string(batch) + " is not within 1.." +
                                                   std::to_string(kExecMaxBatch));
  }
  return Status::ok();
}

}  // namespace
}  // namespace detail

Status reset_exec_status(void* d_workspace, size_t workspace_bytes, CUstream_st* stream) {
  DF11_RETURN_IF_ERROR(detail::check_workspace(d_workspace, workspace_bytes, "reset_exec_status"));
  return detail::reset_status(d_workspace, stream);
}

Status launch_exec_gemm(std::span<const ExecGemm> gemms, uint32_t batch, void* d_workspace,
                        size_t workspace_bytes, CUstream_st* stream, ExecStatusUse use) {
  using namespace detail;
  DF11_RETURN_IF_ERROR(check_batch(batch, "launch_exec_gemm"));
  DF11_RETURN_IF_ERROR(check_workspace(d_workspace, workspace_bytes, "launch_exec_gemm"));
  std::vector<MatrixDesc> descs;
  for (size_t i = 0; i < gemms.size(); ++i) {
    const std::string what = "launch_exec_gemm: matrix " + std::to_string(i);
    DF11_ASSIGN_OR_RETURN(MatrixDesc d, describe_blob(gemms[i].w, static_cast<uint32_t>(i), what));
    if (gemms[i].d_x == nullptr || gemms[i].d_y == nullptr) {
      return Status(ErrorCode::kInvalidArgument, what + ": d_x or d_y is null");
    }
    d.x = gemms[i].d_x;
    d.y = gemms[i].d_y;
    d.x_vec = aligned16(d.x) && d.cols % 8 == 0;
    descs.push_back(d);
  }
  if (use == ExecStatusUse::kReset) DF11_RETURN_IF_ERROR(reset_status(d_workspace, stream));
  if (descs.empty()) return Status::ok();
  return launch_gemms<true>(std::move(descs), batch, static_cast<ExecStatusRecord*>(d_workspace),
                            stream);
}

Status launch_bf16_reference_gemm(std::span<const Bf16Gemm> gemms, uint32_t batch,
                                  CUstream_st* stream) {
  using namespace detail;
  DF11_RETURN_IF_ERROR(check_batch(batch, "launch_bf16_reference_gemm"));
  std::vector<MatrixDesc> descs;
  for (size_t i = 0; i < gemms.size(); ++i) {
    const Bf16Gemm& g = gemms[i];
    const std::string what = "launch_bf16_reference_gemm: matrix " + std::to_string(i);
    DF11_ASSIGN_OR_RETURN(const ExecGeometry geo, exec_geometry(g.rows, g.cols, what));
    if (g.d_w == nullptr || g.d_x == nullptr || g.d_y == nullptr) {
      return Status(ErrorCode::kInvalidArgument, what + ": a null pointer");
    }
    MatrixDesc d = describe(geo, reinterpret_cast<const uint8_t*>(g.d_w), static_cast<uint32_t>(i));
    d.x = g.d_x;
    d.y = g.d_y;
    d.x_vec = aligned16(d.x) && d.cols % 8 == 0;
    d.w_vec = aligned16(d.blob) && d.cols % 8 == 0;
    descs.push_back(d);
  }
  if (descs.empty()) return Status::ok();
  return launch_gemms<false>(std::move(descs), batch, nullptr, stream);
}

Status launch_exec_to_bf16(std::span<const ExecToBf16> items, void* d_workspace,
                           size_t workspace_bytes, CUstream_st* stream, ExecStatusUse use) {
  using namespace detail;
  DF11_RETURN_IF_ERROR(check_workspace(d_workspace, workspace_bytes, "launch_exec_to_bf16"));
  if (use == ExecStatusUse::kReset) DF11_RETURN_IF_ERROR(reset_status(d_workspace, stream));
  auto p = std::make_unique<LaunchParams>();
  p->status = static_cast<ExecStatusRecord*>(d_workspace);
  for (size_t at = 0; at < items.size(); at += kMaxMatrices) {
    const size_t n = std::min<size_t>(kMaxMatrices, items.size() - at);
    p->n = static_cast<uint32_t>(n);
    uint64_t tiles = 0;
    for (size_t i = 0; i < n; ++i) {
      const ExecToBf16& it = items[at + i];
      const std::string what = "launch_exec_to_bf16: matrix " + std::to_string(at + i);
      DF11_ASSIGN_OR_RETURN(p->m[i], describe_blob(it.w, static_cast<uint32_t>(at + i), what));
      if (it.d_out == nullptr) return Status(ErrorCode::kInvalidArgument, what + ": d_out is null");
      p->m[i].y = it.d_out;
      p->m[i].w_vec = aligned16(it.d_out) && it.w.cols % 8 == 0;
      p->begin[i] = static_cast<uint32_t>(tiles);
      tiles += uint64_t{p->m[i].tiles_per_strip} *
               ((uint64_t{it.w.rows} + kExecStripRows - 1) / kExecStripRows);
    }
    if (tiles > UINT32_MAX - kWarps) {
      return Status(ErrorCode::kResourceLimit, "launch_exec_to_bf16: too many tiles in one launch");
    }
    p->begin[n] = static_cast<uint32_t>(tiles);
    if (tiles == 0) continue;
    const uint32_t blocks = static_cast<uint32_t>((tiles + kWarps - 1) / kWarps);
    decode_kernel<<<blocks, kThreads, 0, stream>>>(*p);
    DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "exec -> BF16 kernel launch");
  }
  return Status::ok();
}

Status read_exec_status(const void* d_workspace, CUstream_st* stream,
                        std::span<const std::string> names) {
  using namespace detail;
  if (d_workspace == nullptr) {
    return Status(ErrorCode::kInvalidArgument, "read_exec_status: null workspace");
  }
  ExecStatusRecord r{};
  DF11_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&r, d_workspace, sizeof r, cudaMemcpyDeviceToHost, stream),
      "read_exec_status: cudaMemcpyAsync");
  DF11_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "read_exec_status: sync");
  if (r.kinds == 0) return Status::ok();
  const uint64_t matrix = r.first >> 40, tile = r.first & ((uint64_t{1} << 40) - 1);
  const std::string name =
      matrix < names.size() ? names[matrix] : "matrix " + std::to_string(matrix);
  std::string what;
  if (r.kinds & kExecBadBase) what += " base above Max_Base;";
  if (r.kinds & kExecBadTileOffsets) what += " tile offsets out of order or past n_exceptions;";
  if (r.kinds & kExecBadTileCount) what += " a tile's code-15 weights differ from its exceptions;";
  what.pop_back();
  return Status(ErrorCode::kCorruptData, name + ": tile " + std::to_string(tile) +
                                             " (first of the launch's corrupt tiles):" + what +
                                             " (spec/EXEC_LAYOUT.md 3, P2/P4)");
}

}  // namespace df11::cuda
