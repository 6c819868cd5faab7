// Fused GEMM from the execution layout, its BF16 reference, and the layout -> BF16 decode
// (include/df11/cuda_exec.h; design and measurements in EXEC_KERNEL.md). The fragments and
// the order of the products live in exec_fragments.cuh, shared by all three.
//
// GEMM: one thread block of 8 warps per strip (16 rows); warp w takes the strip's tiles w,
// w + 8, ..., a few steps' loads in flight at a time, two products per step and n8 tile; the 8
// warp sums meet in shared memory and are added in warp order (spec 6). Blocks are ordered by
// decreasing columns, so that the long strips start first. Above 32 rows of X the wide kernels
// (v9, v10): 8 strips and a chunk of X rows per block, each warp computing a strip's 8 partial
// sums in turn, in the same order; X staged in shared memory once per block. At 65-256 rows on
// sm_90a builds, the warpgroup kernel (v23-v26), in its own order.
#include <cooperative_groups.h>
#include <cuda.h>  // CUtensorMap (the encoder is found at run time)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda_error.h"
#include "df11/cuda_exec.h"
#include "exec_fragments.cuh"
#include "exec_wide_core.h"

namespace df11::cuda {
namespace detail {
namespace {

namespace cg = cooperative_groups;

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
// Programmatic dependent launch of the strip kernels (compute capability 9.0 and later): a
// kernel may start as the previous kernel in the stream ends, prefetching its first tile's
// weights into L2, and waits for that kernel (griddepcontrol.wait) before it reads X or writes
// anything. It does not let the next kernel start early itself (griddepcontrol.launch_dependents
// was slower behind a GEMM of few strips: EXEC_KERNEL.md, v11). 0 builds the plain launch.
#ifndef DF11_EXEC_GEMM_PDL
#define DF11_EXEC_GEMM_PDL 1
#endif
// A launch of few strips at batch 9-16 (all of them resident at DF11_EXEC_GEMM_DEEP_BLOCKS
// blocks per multiprocessor, as o_proj's and down_proj's 256) takes a build for fewer blocks,
// whose registers hold more steps in flight: 8% faster on down_proj. At batch 1-8 the same
// (8 or 6 steps for 2 blocks) was slower (EXEC_KERNEL.md, v12). 0 builds without it.
#ifndef DF11_EXEC_GEMM_DEEP
#define DF11_EXEC_GEMM_DEEP 1
#endif
#ifndef DF11_EXEC_GEMM_DEEP_BLOCKS
#define DF11_EXEC_GEMM_DEEP_BLOCKS 2
#endif
#ifndef DF11_EXEC_GEMM_DEEP_STEPS2
#define DF11_EXEC_GEMM_DEEP_STEPS2 4
#endif
#ifndef DF11_EXEC_GEMM_CURSOR32
#define DF11_EXEC_GEMM_CURSOR32 1
#endif
// The strip kernels decode a group of whole steps (the usual group: none past the tile's end
// or ragged) in a copy of the loop without those tests. 0 builds one loop for every group.
#ifndef DF11_EXEC_GEMM_FULL_GROUPS
#define DF11_EXEC_GEMM_FULL_GROUPS 1
#endif
// The strip kernels' rows of X: four n8 tiles (NB = 4). The reference serves more in chunks.
constexpr uint32_t kStripMaxBatch = 32;
template <uint32_t NB>
constexpr uint32_t kGemmStepsInFlight = NB == 1   ? DF11_EXEC_GEMM_STEPS1
                                        : NB == 2 ? DF11_EXEC_GEMM_STEPS2
                                                  : DF11_EXEC_GEMM_STEPS4;
template <uint32_t NB, bool kDeep>
constexpr uint32_t kStepsInFlight = kDeep ? DF11_EXEC_GEMM_DEEP_STEPS2 : kGemmStepsInFlight<NB>;
constexpr uint32_t kDecodeStepsInFlight = kExecTileSteps;

// One matrix of a launch, everything the kernels need (offsets from spec 2.2).
struct MatrixDesc {
  const uint8_t* blob;  // the blob (GEMM, decode), or BF16 W (reference GEMM)
  const uint16_t* x;    // GEMM: X [batch, cols]
  uint16_t* y;          // GEMM: Y [batch, rows]; decode: out [rows, cols]
  uint64_t byte_plane, code_plane, exceptions, tile_offsets;
  uint32_t rows, cols, n_exc;
  uint32_t ld_y;  // GEMM: elements from one row of Y to the next (>= rows)
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

// Waits until the grids this one depends on have completed and their writes are visible: a
// no-op unless the kernel was launched with programmatic stream serialization.
__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void prefetch_l2(const void* at) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(at));
}

// A tile's two offsets (its first exception and the next tile's), as stored.
__device__ __forceinline__ uint2 load_tile_offsets(const MatrixDesc& m, uint64_t tile) {
  const uint32_t* offs = reinterpret_cast<const uint32_t*>(m.blob + m.tile_offsets);
  return make_uint2(__ldg(offs + tile), __ldg(offs + tile + 1));
}

// A tile's exception range [*cursor, *end) from its offsets, checked against the blob's count.
// Cursor: uint64_t, or uint32_t (an exception index is below n_exc, a u32).
template <typename Cursor>
__device__ __forceinline__ void tile_range_of(const LaunchParams& p, const MatrixDesc& m,
                                              uint64_t tile, uint2 offs, uint32_t lane,
                                              Cursor* cursor, Cursor* end) {
  uint32_t a = offs.x, b = offs.y;
  if (b < a || b > m.n_exc) {
    if (lane == 0) exec_report(p.status, m.index, tile, kExecBadTileOffsets);
    a = min(a, m.n_exc);
    b = a;
  }
  *cursor = a;
  *end = b;
}

// The same, its offsets read here.
template <typename Cursor>
__device__ __forceinline__ void tile_range(const LaunchParams& p, const MatrixDesc& m,
                                           uint64_t tile, uint32_t lane, Cursor* cursor,
                                           Cursor* end) {
  tile_range_of(p, m, tile, load_tile_offsets(m, tile), lane, cursor, end);
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
template <typename Cursor>
__device__ __forceinline__ LaneWeights decode_lane(const MatrixDesc& m, const LaneCodes& lc,
                                                   uint32_t base4, Cursor* cursor, Cursor end,
                                                   uint32_t lane, bool& overrun, Cursor win_at = 0,
                                                   uint32_t win = 0, uint32_t win_n = 0) {
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

template <bool kExec, uint32_t NB, bool kDeep = false>
__global__ void __launch_bounds__(kGemmThreads,
                                  (kDeep ? DF11_EXEC_GEMM_DEEP_BLOCKS : kGemmMinBlocks<kExec, NB>))
    gemm_kernel(const __grid_constant__ LaunchParams p) {
  constexpr uint32_t kSteps = kStepsInFlight<NB, kDeep>;
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
  uint32_t base4 = 0;
  if constexpr (kExec) {
    const uint64_t first = strip * m.steps * kExecLanes + lane;
    lane_bytes = reinterpret_cast<const uint4*>(m.blob + m.byte_plane) + first;
    lane_codes = reinterpret_cast<const uint2*>(m.blob + m.code_plane) + first;
    // Until the previous grid is done only the blob is read (no kernel writes it while GEMMs
    // use it), and only into L2: this warp's first tile.
    if (warp < m.tiles_per_strip) {
      const uint32_t q1 = min((warp + 1) * kExecTileSteps, m.steps);
      for (uint32_t q = warp * kExecTileSteps; q < q1; ++q) {
        prefetch_l2(lane_bytes + q * kExecLanes);
        prefetch_l2(lane_codes + q * kExecLanes);
      }
    }
  }
  wait_for_previous_grid();
  if constexpr (kExec) {
    base4 = read_base(p, m, strip * m.tiles_per_strip, threadIdx.x == 0) * 0x01010101u;
  }

  for (uint32_t u = warp; u < m.tiles_per_strip; u += kGemmWarps) {
    const uint64_t tile = strip * m.tiles_per_strip + u;
    const uint32_t q0 = u * kExecTileSteps;
    const uint32_t q1 = min(q0 + kExecTileSteps, m.steps);
    // An exception index is below n_exc (a u32): 32-bit cursors keep the tile's bookkeeping
    // in 32-bit arithmetic.
    using Cursor = std::conditional_t<DF11_EXEC_GEMM_CURSOR32 != 0, uint32_t, uint64_t>;
    Cursor cursor = 0, end = 0, win_at = 0;
    uint32_t win = 0;
    bool overrun = false;
    for (uint32_t q = q0; q < q1; q += kSteps) {
      LaneCodes lc[kSteps];
      uint32_t wa[kSteps][4],
          wb[kSteps][4];  // reference: BF16 pairs
      uint4 xv[kSteps][NB];
      // The group's first addresses, once: each step's loads are then these plus a constant
      // (an immediate offset), not a 64-bit address rebuilt from the step's index.
      const uint4* group_bytes = kExec ? lane_bytes + uint64_t{q} * kExecLanes : nullptr;
      const uint2* group_codes = kExec ? lane_codes + uint64_t{q} * kExecLanes : nullptr;
      const uint32_t c0 = q * kExecStepCols + 8 * t;  // < cols + 32 <= 2^28 + 32
      const uint16_t* group_x[NB];
#pragma unroll
      for (uint32_t n = 0; n < NB; ++n) group_x[n] = xrow[n] + c0;
      const bool full = kExec && x_vec && q + kSteps <= q1 && q + kSteps <= full_steps;
      if (full) {
        // The usual group: kSteps whole steps, X loaded whole; no test per step.
#pragma unroll
        for (uint32_t i = 0; i < kSteps; ++i) {
          lc[i].bytes = __ldg(group_bytes + i * kExecLanes);
          lc[i].codes = __ldg(group_codes + i * kExecLanes);
#pragma unroll
          for (uint32_t n = 0; n < NB; ++n) {
            xv[i][n] = __ldg(reinterpret_cast<const uint4*>(group_x[n] + i * kExecStepCols));
          }
        }
      } else {
#pragma unroll
        for (uint32_t i = 0; i < kSteps; ++i) {
          if (q + i >= q1) break;
          const uint32_t c = c0 + i * kExecStepCols;
          if constexpr (kExec) {
            lc[i].bytes = __ldg(group_bytes + i * kExecLanes);
            lc[i].codes = __ldg(group_codes + i * kExecLanes);
          } else {
            const auto* w = reinterpret_cast<const uint16_t*>(m.blob);
            bf16_row8(w, m.rows, cols, strip * kExecStripRows + g, c, m.w_vec, wa[i]);
            bf16_row8(w, m.rows, cols, strip * kExecStripRows + 8 + g, c, m.w_vec, wb[i]);
          }
#pragma unroll
          for (uint32_t n = 0; n < NB; ++n) {
            xv[i][n] = x_vec && q + i < full_steps
                           ? __ldg(reinterpret_cast<const uint4*>(group_x[n] + i * kExecStepCols))
                           : exec_load_x(xrow[n], c, cols, x_vec);
          }
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
            if (k < end - cursor) win |= uint32_t{__ldg(exc + cursor + k)} << (8 * k);
          }
        }
      }
      if constexpr (kExec && DF11_EXEC_GEMM_FULL_GROUPS != 0) {
        if (full) {  // the usual group's steps: none past the tile, none ragged
#pragma unroll
          for (uint32_t i = 0; i < kSteps; ++i) {
            const LaneWeights lw =
                decode_lane(m, lc[i], base4, &cursor, end, lane, overrun, win_at, win, 4);
            step_products<NB>(lw, xv[i], acc);
          }
          continue;
        }
      }
#pragma unroll
      for (uint32_t i = 0; i < kSteps; ++i) {
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
  exec_strip_sums<NB, kGemmWarps>(red, acc, strip, m.rows, p.batch, m.y, m.ld_y);
}

// ---- The wide GEMM: more rows of X than the strip kernels serve (EXEC_KERNEL.md v9) ----
//
// One thread block of kWideWarps warps takes a group of kWideWarps strips (one per warp) and a
// chunk of 8 N8 rows of X (exec_wide_core.h). Each warp walks its strip's tiles partial by
// partial: an accumulator set from +0 per partial sum, added to the strip's running sum when
// the partial ends (__fadd_rn, in partial order, the first partial being the sum), so that
// every output is spec 6's sequence: the strip kernel's warp w is partial w here. All warps walk
// the same tile at the same time, so the tile's 256 columns of the chunk's rows of X are staged
// in shared memory once per block (cp.async, two stages: the next tile's while this one's
// products run), and each warp's weights are loaded kWideSteps steps ahead of their decode,
// across tile boundaries. The settings below are overridable only for A/B builds.
#ifndef DF11_EXEC_WIDE_N8
#define DF11_EXEC_WIDE_N8 8  // n8 tiles per chunk: 64 rows of X
#endif
#ifndef DF11_EXEC_WIDE_N8_SMALL
#define DF11_EXEC_WIDE_N8_SMALL 4  // the chunk where the above leaves multiprocessors idle
#endif
#ifndef DF11_EXEC_WIDE_FROM
#define DF11_EXEC_WIDE_FROM 33  // the smallest batch the wide kernel serves (<= 33)
#endif
#ifndef DF11_EXEC_WIDE_STEPS
#define DF11_EXEC_WIDE_STEPS 2  // steps of weights loaded ahead (divides Tile_Steps)
#endif
#ifndef DF11_EXEC_WIDE_MIN_BLOCKS
#define DF11_EXEC_WIDE_MIN_BLOCKS 2
#endif
#ifndef DF11_EXEC_WIDE_SHARED_SUMS
#define DF11_EXEC_WIDE_SHARED_SUMS 1  // 0: the running sums in registers (128 of them: spills)
#endif
#ifndef DF11_EXEC_WIDE_SPLIT
#define DF11_EXEC_WIDE_SPLIT 1  // 0: the partials in turn in one block (v9), not a cluster (v10)
#endif
#ifndef DF11_EXEC_SPLIT_MIN_BLOCKS
#define DF11_EXEC_SPLIT_MIN_BLOCKS 3  // thread blocks per multiprocessor of the cluster kernel
#endif
// The cluster kernel walks a whole tile (every step present, none ragged) in a copy of its loop
// without per-step tests, its loads at constant offsets from the tile's first addresses, with
// 32-bit exception cursors. 0 builds one loop for every tile.
// n8 tiles (8 rows of X each) in a chunk of the cluster kernel.
#ifndef DF11_EXEC_SPLIT_N8
#define DF11_EXEC_SPLIT_N8 DF11_EXEC_WIDE_N8
#endif
#ifndef DF11_EXEC_SPLIT_WHOLE_TILES
#define DF11_EXEC_SPLIT_WHOLE_TILES 1
#endif
constexpr bool kWideSplit = DF11_EXEC_WIDE_SPLIT != 0;
constexpr uint32_t kWideWarps = 8;  // = strips per block
constexpr uint32_t kWideThreads = 32 * kWideWarps;
constexpr uint32_t kWideN8 = DF11_EXEC_WIDE_N8;
constexpr uint32_t kWideN8Small = DF11_EXEC_WIDE_N8_SMALL;
constexpr uint32_t kWideSteps = DF11_EXEC_WIDE_STEPS;
constexpr uint32_t kSplitN8 = DF11_EXEC_SPLIT_N8;
constexpr uint32_t kWideFrom = DF11_EXEC_WIDE_FROM;
// The running sums in shared memory where the device has room for them (104 KB a block with
// 8 n8 tiles; GPUs of compute capability 8.6 and 8.9 allow 99 KB), else in registers.
constexpr bool kWidePreferSharedSums = DF11_EXEC_WIDE_SHARED_SUMS != 0;
static_assert(kExecTileSteps % kWideSteps == 0, "a tile's steps split into whole groups");
static_assert(kWideFrom >= 1 && kWideFrom <= 33, "the strip kernels serve at most 32 rows");
constexpr uint32_t kTileCols = kExecTileSteps * kExecStepCols;  // 256
// A staged row of X: the tile's 256 columns and 32 of padding. 576 bytes is 64 mod 128, so
// rows g and g + 1 fall in different halves of the 32 banks, and the 8 lanes of a quarter
// warp (g, g + 1; t = 0..3) read their 16 bytes each without a bank conflict.
constexpr uint32_t kWideRowElems = kTileCols + 32;
constexpr size_t wide_shared_bytes(uint32_t n8, bool shared_sums) {
  return 2 * size_t{8} * n8 * kWideRowElems * sizeof(uint16_t) +
         (shared_sums ? size_t{kWideWarps} * n8 * 4 * 32 * sizeof(float) : 0);
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const auto s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s),
               "l"(__cvta_generic_to_global(gmem))
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Stages the columns of tile `tile` of rows first .. first + 8 live_n8 - 1 of X into `stage`
// ([8 n8][kWideRowElems]), zero past cols and past the batch (the products of the ragged
// last step take +0 x values, as exec_load_x gives the strip kernels): cp.async where X's 8
// columns are whole and 16-byte aligned, plain loads otherwise. Every thread of the block calls
// it.
__device__ __forceinline__ void wide_stage_x(uint16_t* stage, const MatrixDesc& m, uint32_t batch,
                                             uint32_t first, uint32_t live_n8, uint32_t tile) {
  constexpr uint32_t kPieces = kTileCols / 8;  // of 16 bytes per row
  const uint32_t pieces = live_n8 * 8 * kPieces;
  for (uint32_t i = threadIdx.x; i < pieces; i += kWideThreads) {
    const uint32_t r = i / kPieces, c8 = i % kPieces;
    const uint32_t j = first + r;
    const uint64_t c = uint64_t{tile} * kTileCols + 8 * c8;
    uint16_t* dst = stage + r * kWideRowElems + 8 * c8;
    if (j >= batch || c >= m.cols) {
      *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
      continue;
    }
    const uint16_t* xrow = m.x + uint64_t{j} * m.cols;
    if (m.x_vec) {  // cols % 8 == 0: c + 8 <= cols
      cp_async16(dst, xrow + c);
    } else {
      *reinterpret_cast<uint4*>(dst) = exec_load_x(xrow, c, m.cols, false);
    }
  }
}

// One warp's strip in the wide kernels (v9, v10): where its lane's weights start, and what of
// the matrix the walk over its tiles needs.
struct WideStrip {
  const uint4* lane_bytes;
  const uint2* lane_codes;
  uint64_t tile0;  // the strip's first tile
  uint32_t steps, base4;
  bool live;  // a strip of the matrix (the last group's warps past it only stage X)

  // Step s of tile `tile` of the strip into lc, if the step exists.
  __device__ __forceinline__ void operator()(uint32_t tile, uint32_t s, LaneCodes& lc) const {
    load_step(tile, s, lc);
  }
  // Step s of tile `tile` of the strip into lc, if the step exists.
  __device__ __forceinline__ void load_step(uint32_t tile, uint32_t s, LaneCodes& lc) const {
    const uint64_t q = uint64_t{tile} * kExecTileSteps + s;
    if (live && q < steps) {
      lc.bytes = __ldg(lane_bytes + q * kExecLanes);
      lc.codes = __ldg(lane_codes + q * kExecLanes);
    }
  }
};

// Step s + i of a walk, taken from its ring slot, and the slot refilled kWideSteps steps
// ahead: from tile `at`, or past its end from tile `next` if `more` (load(tile, step, slot)).
template <typename Load>
__device__ __forceinline__ LaneCodes wide_ring_take(LaneCodes (&ring)[kWideSteps], uint32_t i,
                                                    uint32_t s, uint32_t at, uint32_t next,
                                                    bool more, const Load& load) {
  const LaneCodes lc = ring[i];
  const uint32_t ahead = s + i + kWideSteps;
  if (ahead < kExecTileSteps) {
    load(at, ahead, ring[i]);
  } else if (more) {
    load(next, ahead - kExecTileSteps, ring[i]);
  }
  return lc;
}

// Strip `group` * kWideWarps + this warp of m (the group's base read and checked once).
__device__ __forceinline__ WideStrip wide_strip(const LaunchParams& p, const MatrixDesc& m,
                                                uint32_t group) {
  const uint32_t strips = (m.rows + kExecStripRows - 1) / kExecStripRows;
  const uint32_t strip = group * kWideWarps + threadIdx.x / 32;
  WideStrip w;
  w.live = strip < strips;
  w.steps = m.steps;
  w.tile0 = uint64_t{w.live ? strip : 0} * m.tiles_per_strip;
  w.base4 = read_base(p, m, uint64_t{group} * kWideWarps * m.tiles_per_strip, threadIdx.x == 0) *
            0x01010101u;
  const uint64_t first = uint64_t{w.live ? strip : 0} * m.steps * kExecLanes + threadIdx.x % 32;
  w.lane_bytes = reinterpret_cast<const uint4*>(m.blob + m.byte_plane) + first;
  w.lane_codes = reinterpret_cast<const uint2*>(m.blob + m.code_plane) + first;
  return w;
}

// Before a walk whose first tile is `first`: that tile's first steps of weights in `ring`, its
// exception offsets in `offs`, and its X staged in stage 0 (committed, not waited for).
__device__ __forceinline__ void wide_walk_start(const MatrixDesc& m, const WideStrip& w,
                                                uint32_t batch, const ExecWideBlock& blk,
                                                uint32_t first, LaneCodes (&ring)[kWideSteps],
                                                uint2& offs, uint16_t* xs) {
#pragma unroll
  for (uint32_t i = 0; i < kWideSteps; ++i) w.load_step(first, i, ring[i]);
  offs = w.live ? load_tile_offsets(m, w.tile0 + first) : make_uint2(0, 0);
  wide_stage_x(xs, m, batch, blk.first_row, blk.live_n8, first);
  cp_async_commit();
}

// The k-th tile of a walk: stages the next tile's X (tile `next`, if `more`) into the other
// stage, then waits until stage k % 2 holds this tile's, for every thread of the block.
template <uint32_t kStage>
__device__ __forceinline__ void wide_tile_staged(uint16_t* xs, uint32_t k, bool more,
                                                 const MatrixDesc& m, uint32_t batch,
                                                 const ExecWideBlock& blk, uint32_t next) {
  if (more) {
    wide_stage_x(xs + ((k + 1) % 2) * kStage, m, batch, blk.first_row, blk.live_n8, next);
    cp_async_commit();
    cp_async_wait<1>();
  } else {
    cp_async_wait<0>();
  }
  __syncthreads();
}

// One step's products for the wide kernels: its weights times each live n8 tile of X rows (at
// `xq`, row 8n + g), accumulated into acc[n].
template <uint32_t N8>
__device__ __forceinline__ void wide_step_products(const LaneWeights& lw, const uint16_t* xq,
                                                   uint32_t live_n8, float (&acc)[N8][4]) {
#pragma unroll
  for (uint32_t n = 0; n < N8; ++n) {
    if (n < live_n8) {
      n8_products(lw, *reinterpret_cast<const uint4*>(xq + 8 * n * kWideRowElems), acc[n]);
    }
  }
}

// The products of tile `at` of a live strip into acc, in spec 6's order, its X at `stage`: its
// steps' weights from `ring`, refilled kWideSteps steps ahead (from tile `next` past its end
// when `more`); `offs` holds its exception offsets on entry and tile `next`'s after. A tile
// whose code-15 weights disagree with its exceptions is reported.
template <uint32_t N8>
__device__ __forceinline__ void wide_tile_products(const LaunchParams& p, const MatrixDesc& m,
                                                   const WideStrip& w, uint32_t at, uint32_t next,
                                                   bool more, LaneCodes (&ring)[kWideSteps],
                                                   uint2& offs, const uint16_t* stage,
                                                   uint32_t live_n8, float (&acc)[N8][4]) {
  const uint32_t lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const uint64_t tile = w.tile0 + at;
  uint64_t cursor = 0, end = 0;
  bool overrun = false;
  tile_range_of(p, m, tile, offs, lane, &cursor, &end);
  if (more) offs = load_tile_offsets(m, w.tile0 + next);
  const uint32_t q0 = at * kExecTileSteps, full_steps = m.cols / kExecStepCols;
  const uint16_t* xlane = stage + g * kWideRowElems + 8 * t;  // row 8n + g, columns 8t..
  for (uint32_t s = 0; s < kExecTileSteps; s += kWideSteps) {
#pragma unroll
    for (uint32_t i = 0; i < kWideSteps; ++i) {
      const LaneCodes lc = wide_ring_take(ring, i, s, at, next, more, w);
      const uint32_t q = q0 + s + i;
      if (q >= w.steps) continue;  // the strip's ragged last tile (warp-uniform)
      LaneWeights lw = decode_lane(m, lc, w.base4, &cursor, end, lane, overrun);
      if (q >= full_steps) mask_columns(lw, uint64_t{q} * kExecStepCols + 8 * t, m.cols);
      wide_step_products(lw, xlane + (s + i) * kExecStepCols, live_n8, acc);
    }
  }
  if (lane == 0 && (overrun || cursor != end)) {
    exec_report(p.status, m.index, tile, kExecBadTileCount);
  }
}

template <uint32_t N8, bool kWideSharedSums>
__global__ void __launch_bounds__(kWideThreads, DF11_EXEC_WIDE_MIN_BLOCKS)
    wide_gemm_kernel(const __grid_constant__ LaunchParams p) {
  constexpr uint32_t kRows = 8 * N8, kStage = kRows * kWideRowElems;
  extern __shared__ uint4 wide_shared[];
  uint16_t* xs = reinterpret_cast<uint16_t*>(wide_shared);  // two stages of X
  float* shared_sums = reinterpret_cast<float*>(xs + 2 * kStage);
  const uint32_t mi = find_matrix(p, blockIdx.x);
  const MatrixDesc& m = p.m[mi];
  const ExecWideShape shape = exec_wide_shape(m.rows, p.batch, kWideWarps, kRows);
  const ExecWideBlock blk = exec_wide_block(shape, blockIdx.x - p.begin[mi], p.batch, kRows);
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t g = lane / 4, t = lane % 4;
  const uint32_t strip = blk.group * kWideWarps + warp;
  const WideStrip w = wide_strip(p, m, blk.group);
  const uint32_t tiles = m.tiles_per_strip;
  // ring[i]: step s + i of the tile walked (s a multiple of kWideSteps), loaded while step
  // s + i - kWideSteps was decoded (the first ones here).
  LaneCodes ring[kWideSteps] = {};
  uint2 offs;
  wide_walk_start(m, w, p.batch, blk, 0, ring, offs, xs);

  float acc[N8][4];
  float sum[kWideSharedSums ? 1 : N8][4];
  // The running sum of output (n, c) of this lane, partial by partial.
  auto add_partial = [&](uint32_t partial) {
#pragma unroll
    for (uint32_t n = 0; n < N8; ++n) {
#pragma unroll
      for (uint32_t c = 0; c < 4; ++c) {
        if constexpr (kWideSharedSums) {
          float& s = shared_sums[((warp * N8 + n) * 4 + c) * 32 + lane];
          s = partial == 0 ? acc[n][c] : __fadd_rn(s, acc[n][c]);
        } else {
          sum[n][c] = partial == 0 ? acc[n][c] : __fadd_rn(sum[n][c], acc[n][c]);
        }
      }
    }
  };

  ExecWalk at{0, 0};
  for (uint32_t k = 0; k < tiles; ++k) {
    const ExecWalk next = exec_walk_next(at, tiles, kGemmWarps);
    const bool more = k + 1 < tiles;
    wide_tile_staged<kStage>(xs, k, more, m, p.batch, blk, next.tile);  // this tile's X staged
    if (w.live) {
      if (at.tile == at.partial) {  // a partial's first tile
#pragma unroll
        for (uint32_t n = 0; n < N8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
      }
      wide_tile_products<N8>(p, m, w, at.tile, next.tile, more, ring, offs, xs + (k % 2) * kStage,
                             blk.live_n8, acc);
      if (exec_walk_ends_partial(at, tiles, kGemmWarps)) add_partial(at.partial);
    }
    __syncthreads();  // this tile's stage is free for the tile after next
    at = next;
  }
  if (!w.live) return;
  // The partials with no tile add their +0, as the strip kernel's warps with no tile do.
  const uint32_t empty = exec_walk_empty_partials(tiles, kGemmWarps);
#pragma unroll
  for (uint32_t n = 0; n < N8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
  for (uint32_t e = 0; e < empty; ++e) add_partial(kGemmWarps - empty + e);
#pragma unroll
  for (uint32_t n = 0; n < N8; ++n) {
    if (n >= blk.live_n8) break;
#pragma unroll
    for (uint32_t c = 0; c < 4; ++c) {
      const uint64_t r = uint64_t{strip} * kExecStripRows + g + 8 * (c / 2);
      const uint32_t j = blk.first_row + 8 * n + 2 * t + c % 2;
      if (r < m.rows && j < p.batch) {
        const float v = kWideSharedSums ? shared_sums[((warp * N8 + n) * 4 + c) * 32 + lane]
                                        : sum[kWideSharedSums ? 0 : n][c];
        m.y[uint64_t{j} * m.ld_y + r] = __bfloat16_as_ushort(__float2bfloat16_rn(v));
      }
    }
  }
}

// The wide GEMM with its partials split over a cluster of kGemmWarps thread blocks (EXEC_KERNEL.md
// v10; sm_90): block p of a cluster computes partial sum p (tiles p, p + 8, ..., from +0) of
// the group's 8 strips for the chunk's rows, as wide_gemm_kernel's warps compute each partial;
// the 8 partials then meet through distributed shared memory, and block q adds those of strip q
// in partial order (the first partial being the sum, a partial with no tile adding its +0), so
// each output is spec 6's sequence again, with 8 times the warps of wide_gemm_kernel at work.
// Its walk is written out rather than built on wide_tile_products and its siblings: built on
// them it compiled to more spill and ran 12% slower (EXEC_KERNEL.md, v10). It shares only the
// ring's refill (wide_ring_take), which leaves its SASS as measured.
template <uint32_t N8>
__global__ void __launch_bounds__(kWideThreads, DF11_EXEC_SPLIT_MIN_BLOCKS)
    split_gemm_kernel(const __grid_constant__ LaunchParams p) {
#if __CUDA_ARCH__ >= 900
  constexpr uint32_t kRows = 8 * N8, kStage = kRows * kWideRowElems;
  extern __shared__ uint4 wide_shared[];
  uint16_t* xs = reinterpret_cast<uint16_t*>(wide_shared);  // two stages of X
  float* red = reinterpret_cast<float*>(wide_shared);       // after the walk: the partials
  const uint32_t mi = find_matrix(p, blockIdx.x);
  const MatrixDesc& m = p.m[mi];
  const uint32_t item = blockIdx.x - p.begin[mi];
  const uint32_t partial = item % kGemmWarps;  // = the block's rank in its cluster
  const ExecWideShape shape = exec_wide_shape(m.rows, p.batch, kWideWarps, kRows);
  const ExecWideBlock blk = exec_wide_block(shape, item / kGemmWarps, p.batch, kRows);
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t t = lane % 4;
  const uint32_t strips = (m.rows + kExecStripRows - 1) / kExecStripRows;
  const uint32_t strip = blk.group * kWideWarps + warp;
  const bool live = strip < strips;
  const uint32_t tiles = m.tiles_per_strip, steps = m.steps, cols = m.cols;
  const uint32_t full_steps = cols / kExecStepCols;
  const uint32_t mine = tiles > partial ? (tiles - partial + kGemmWarps - 1) / kGemmWarps : 0;
  const uint64_t tile0 = uint64_t{live ? strip : 0} * tiles;
  const uint32_t base4 =
      read_base(p, m, uint64_t{blk.group} * kWideWarps * tiles, threadIdx.x == 0) * 0x01010101u;
  const uint64_t first_entry = uint64_t{live ? strip : 0} * steps * kExecLanes + (threadIdx.x % 32);
  const uint4* lane_bytes = reinterpret_cast<const uint4*>(m.blob + m.byte_plane) + first_entry;
  const uint2* lane_codes = reinterpret_cast<const uint2*>(m.blob + m.code_plane) + first_entry;
  auto load_step = [&](uint32_t tile, uint32_t s, LaneCodes& lc) {
    const uint64_t q = uint64_t{tile} * kExecTileSteps + s;
    if (live && q < steps) {
      lc.bytes = __ldg(lane_bytes + q * kExecLanes);
      lc.codes = __ldg(lane_codes + q * kExecLanes);
    }
  };
  float acc[N8][4];
#pragma unroll
  for (uint32_t n = 0; n < N8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
  if (mine > 0) {
    LaneCodes ring[kWideSteps] = {};
#pragma unroll
    for (uint32_t i = 0; i < kWideSteps; ++i) load_step(partial, i, ring[i]);
    uint2 offs = live ? load_tile_offsets(m, tile0 + partial) : make_uint2(0, 0);
    wide_stage_x(xs, m, p.batch, blk.first_row, blk.live_n8, partial);
    cp_async_commit();
    for (uint32_t k = 0; k < mine; ++k) {
      const uint32_t at = partial + k * kGemmWarps, next = at + kGemmWarps;
      const bool more = k + 1 < mine;
      const uint16_t* stage = xs + (k % 2) * kStage;
      if (more) {
        wide_stage_x(xs + ((k + 1) % 2) * kStage, m, p.batch, blk.first_row, blk.live_n8, next);
        cp_async_commit();
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();  // this tile's X is staged
      if (live) {
        const uint64_t tile = tile0 + at;
        using Cursor = std::conditional_t<DF11_EXEC_SPLIT_WHOLE_TILES != 0, uint32_t, uint64_t>;
        Cursor cursor = 0, end = 0;
        bool overrun = false;
        tile_range_of(p, m, tile, offs, lane, &cursor, &end);
        if (more) offs = load_tile_offsets(m, tile0 + next);
        const uint32_t q0 = at * kExecTileSteps;
        const uint16_t* xlane = stage + (lane / 4) * kWideRowElems + 8 * t;
        if (DF11_EXEC_SPLIT_WHOLE_TILES != 0 && q0 + kExecTileSteps <= full_steps) {
          // A whole tile: each group's loads are a running address plus a constant; the
          // products and their order are the loop's below.
          const uint4* group_bytes = lane_bytes + uint64_t{q0 + kWideSteps} * kExecLanes;
          const uint2* group_codes = lane_codes + uint64_t{q0 + kWideSteps} * kExecLanes;
          for (uint32_t s = 0; s < kExecTileSteps; s += kWideSteps) {
            const bool in_tile = s + kWideSteps < kExecTileSteps;
#pragma unroll
            for (uint32_t i = 0; i < kWideSteps; ++i) {
              const LaneCodes lc = ring[i];
              if (in_tile) {
                ring[i].bytes = __ldg(group_bytes + i * kExecLanes);
                ring[i].codes = __ldg(group_codes + i * kExecLanes);
              } else if (more) {
                load_step(next, i, ring[i]);
              }
              const LaneWeights lw = decode_lane(m, lc, base4, &cursor, end, lane, overrun);
              wide_step_products(lw, xlane + (s + i) * kExecStepCols, blk.live_n8, acc);
            }
            group_bytes += kWideSteps * kExecLanes;
            group_codes += kWideSteps * kExecLanes;
          }
        } else {
          for (uint32_t s = 0; s < kExecTileSteps; s += kWideSteps) {
#pragma unroll
            for (uint32_t i = 0; i < kWideSteps; ++i) {
              const LaneCodes lc = wide_ring_take(ring, i, s, at, next, more, load_step);
              const uint32_t q = q0 + s + i;
              if (q >= steps) continue;  // the strip's ragged last tile (warp-uniform)
              LaneWeights lw = decode_lane(m, lc, base4, &cursor, end, lane, overrun);
              if (q >= full_steps) mask_columns(lw, uint64_t{q} * kExecStepCols + 8 * t, cols);
              wide_step_products(lw, xlane + (s + i) * kExecStepCols, blk.live_n8, acc);
            }
          }
        }
        if (lane == 0 && (overrun || cursor != end)) {
          exec_report(p.status, m.index, tile, kExecBadTileCount);
        }
      }
      __syncthreads();  // this tile's stage is free for the tile after next
    }
  }
  // The partial of every warp's strip, where X was: red[warp][n][c][lane].
#pragma unroll
  for (uint32_t n = 0; n < N8; ++n) {
#pragma unroll
    for (uint32_t c = 0; c < 4; ++c) red[((warp * N8 + n) * 4 + c) * 32 + lane] = acc[n][c];
  }
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();  // every block's partials are written
  // Block q adds strip q's partials (group strip q of every block), in partial order.
  const uint32_t q = partial;
  const uint32_t out_strip = blk.group * kWideWarps + q;
  if (out_strip < strips) {
    const float* parts[kGemmWarps];
#pragma unroll
    for (uint32_t r = 0; r < kGemmWarps; ++r) parts[r] = cluster.map_shared_rank(red, r);
    for (uint32_t i = threadIdx.x; i < N8 * 4 * 32; i += kWideThreads) {
      const uint32_t n = i / 128, c = (i / 32) % 4, l = i % 32;
      if (n >= blk.live_n8) continue;
      const uint32_t at = ((q * N8 + n) * 4 + c) * 32 + l;
      float v = parts[0][at];
#pragma unroll
      for (uint32_t r = 1; r < kGemmWarps; ++r) v = __fadd_rn(v, parts[r][at]);
      const uint64_t row = uint64_t{out_strip} * kExecStripRows + l / 4 + 8 * (c / 2);
      const uint32_t j = blk.first_row + 8 * n + 2 * (l % 4) + c % 2;
      if (row < m.rows && j < p.batch) {
        m.y[uint64_t{j} * m.ld_y + row] = __bfloat16_as_ushort(__float2bfloat16_rn(v));
      }
    }
  }
  cluster.sync();  // no block leaves while another reads its shared memory
#else
  __trap();  // launched only on sm_90 and later (launch_gemms)
#endif
}

// ---- The warpgroup kernel: 65-256 rows of X on sm_90a (EXEC_KERNEL.md v23-v26) ----
//
// One thread block of 8 warps (two warpgroups) takes 128 rows of W (8 strips, one per warp), a
// chunk of N rows of X (exec_wg_chunk_rows: 96, 112 or 128 where it is used, exec_wg_takes) and a
// slice of the strips' tiles (exec_wide_core.h). Per step (32 columns) each warp decodes its
// strip's 512 weights, as every kernel does, into registers that are already the A operand of
// Hopper's warpgroup products: a warp's A fragment of wgmma.m64nNk16 is the m16n8k16 fragment
// the strip kernels multiply. Each warpgroup then issues two m64nNk16 products (its 64 rows of
// W as A from registers, the chunk's N rows of X as B from shared memory), and decodes the
// next step while they run. No decoded weight goes through shared memory; the blob's bytes and
// X do, copied by cp.async two stages of kWgSx steps ahead (the blob's steps by the warp that
// decodes them; a whole stage's copies at the stage's first step), with one block barrier a
// stage.
//
// The order of the products' k: as in n8_products, the step's first product takes each
// lane's columns 8t..8t+3 and the second 8t+4..8t+7, so k = 2t, 2t+1 of product h is column
// 8t + 4h + (0, 1) and k = 2t + 8, 2t + 9 is 8t + 4h + (2, 3). X is staged in that order:
// pair word P + 4t' of a row of X (P = 0..3) lands in plane P, at word t' of the row's 16
// bytes, so that planes 2h and 2h + 1 are product h's two core matrices along k.
//
// Every output of a slice is one chain of these products in step order from +0; the slices of
// a cluster meet in shared memory and are added in slice order (__fadd_rn), rounded once to
// BF16. The reference GEMM is the same kernel with the weights read as BF16 (kExec false): the
// same instructions on the same operands.
#ifndef DF11_EXEC_WG
#define DF11_EXEC_WG 1  // 0: the cluster kernel (v10) above 32 rows also on sm_90a builds
#endif
#ifndef DF11_EXEC_WG_SX
#define DF11_EXEC_WG_SX 2  // steps per stage (2, 4 or 8): one block barrier per stage
#endif
#ifndef DF11_EXEC_WG_BUFS
#define DF11_EXEC_WG_BUFS 4  // stages in shared memory: copies run BUFS - 2 stages ahead
#endif
#ifndef DF11_EXEC_WG_UNROLL
#define DF11_EXEC_WG_UNROLL 2  // steps per turn of the loop (divides 8)
#endif
#ifndef DF11_EXEC_WG_MIN_BLOCKS
#define DF11_EXEC_WG_MIN_BLOCKS \
  2  // thread blocks per multiprocessor up to N = DF11_EXEC_WG_TWO_UPTO
#endif
#ifndef DF11_EXEC_WG_TWO_UPTO
#define DF11_EXEC_WG_TWO_UPTO 112
#endif
constexpr uint32_t kWgSx = DF11_EXEC_WG_SX;
constexpr uint32_t kWgBufs = DF11_EXEC_WG_BUFS;
// A stage's slot is refilled two stages after its products: the last products of a stage may
// still run while the next stage's first step decodes, until that step's wait.
[[maybe_unused]] constexpr uint32_t kWgAhead = kWgBufs - 2;  // stages
[[maybe_unused]] constexpr uint32_t kWgLoads = DF11_EXEC_WG_UNROLL;
static_assert(kExecTileSteps % kWgSx == 0 && kWgSx >= 2, "a stage is part of one tile");
static_assert(kWgBufs >= 3, "copies run at least one stage ahead");
static_assert(kExecTileSteps % kWgLoads == 0, "a turn of the loop is part of one tile");
constexpr uint32_t kWgThreads = 256;
// X in shared memory, a stage being [step][plane P][N / 8 core matrices of 8 rows x 16 bytes].
[[maybe_unused]] constexpr uint32_t wg_plane_bytes(uint32_t n) { return n * 16; }
constexpr uint32_t wg_step_bytes(uint32_t n) { return 4 * n * 16; }
constexpr uint32_t wg_stage_bytes(uint32_t n) { return kWgSx * wg_step_bytes(n); }
// W's blob in shared memory, a stage being [warp][the stage's byte-plane entries, then its
// code-plane entries] in the blob's order: 768 bytes a warp and step.
constexpr uint32_t kWgWStep = kExecLanes * 24;
constexpr uint32_t kWgWWarp = kWgSx * kWgWStep;
constexpr uint32_t kWgWStage = 8 * kWgWWarp;
// The partials after the walk, sums[token][row] with rows padded so that a warp's writes fall
// in distinct banks.
constexpr uint32_t kWgSumStride = kExecWgRows + 4;
constexpr size_t wg_shared_bytes(uint32_t n) {
  const size_t ring = size_t{kWgBufs} * (wg_stage_bytes(n) + kWgWStage);
  const size_t sums = size_t{kWgSumStride} * n * sizeof(float);
  return ring > sums ? ring : sums;
}
constexpr uint32_t wg_min_blocks(uint32_t n) {
  return n <= DF11_EXEC_WG_TWO_UPTO ? DF11_EXEC_WG_MIN_BLOCKS : 1;
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// A shared-memory operand of a product (no swizzle): its start, the bytes from one core matrix
// to the next along K (lbo) and along M or N (sbo).
__device__ __forceinline__ uint64_t wg_desc(uint32_t smem, uint32_t lbo, uint32_t sbo) {
  return uint64_t{(smem & 0x3FFFFu) >> 4} | uint64_t{lbo >> 4} << 16 | uint64_t{sbo >> 4} << 32;
}
__device__ __forceinline__ void wg_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Writes of the generic proxy (stores, cp.async) to shared memory, made visible to the products.
__device__ __forceinline__ void wg_fence_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
template <uint32_t K>
__device__ __forceinline__ void wg_hold(float (&d)[K]) {
#pragma unroll
  for (uint32_t i = 0; i < K; ++i) asm volatile("" : "+f"(d[i]));
}
// 4 bytes, of which `bytes` (4 or 0) read and the rest zero-filled.
__device__ __forceinline__ void cp_async4(uint32_t smem, const void* gmem, uint32_t bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem),
               "l"(__cvta_generic_to_global(gmem)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ LaneCodes ld_shared_lane(uint32_t bytes, uint32_t codes) {
  LaneCodes lc;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(lc.bytes.x), "=r"(lc.bytes.y), "=r"(lc.bytes.z), "=r"(lc.bytes.w)
               : "r"(bytes)
               : "memory");
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n"
               : "=r"(lc.codes.x), "=r"(lc.codes.y)
               : "r"(codes)
               : "memory");
  return lc;
}
__device__ __forceinline__ void cp_async16s(uint32_t smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem),
               "l"(__cvta_generic_to_global(gmem))
               : "memory");
}
__device__ __forceinline__ void st_shared_u32(uint32_t smem, uint32_t v) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(smem), "r"(v) : "memory");
}

// d += A B for one m64nNk16 product: A (64 x 16, BF16) from registers, this warp's 16 rows as
// an m16n8k16 A fragment; B (16 x N) from shared memory by descriptor, K-major; FP32 sums.
template <uint32_t N>
__device__ __forceinline__ void wgmma_ra(float (&d)[N / 2], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint64_t db);
// The accumulators of a product as operands, 8 at a time, and their operand numbers.
#define DF11_WG_D8(b)                                                                         \
  "+f"(d[b]), "+f"(d[b + 1]), "+f"(d[b + 2]), "+f"(d[b + 3]), "+f"(d[b + 4]), "+f"(d[b + 5]), \
      "+f"(d[b + 6]), "+f"(d[b + 7])
#define DF11_WG_D48 \
  DF11_WG_D8(0), DF11_WG_D8(8), DF11_WG_D8(16), DF11_WG_D8(24), DF11_WG_D8(32), DF11_WG_D8(40)
#define DF11_WG_D56 DF11_WG_D48, DF11_WG_D8(48)
#define DF11_WG_D24 DF11_WG_D8(0), DF11_WG_D8(8), DF11_WG_D8(16)
#define DF11_WG_D32 DF11_WG_D24, DF11_WG_D8(24)
#define DF11_WG_R24 \
  "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23"
#define DF11_WG_R32 DF11_WG_R24 ",%24,%25,%26,%27,%28,%29,%30,%31"
#define DF11_WG_R48                                                                            \
  "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24," \
  "%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47"
#define DF11_WG_R56 DF11_WG_R48 ",%48,%49,%50,%51,%52,%53,%54,%55"
#define DF11_WG_D64 DF11_WG_D56, DF11_WG_D8(56)
#define DF11_WG_R64 DF11_WG_R56 ",%56,%57,%58,%59,%60,%61,%62,%63"
#define DF11_WG_D128                                                                           \
  DF11_WG_D64, DF11_WG_D8(64), DF11_WG_D8(72), DF11_WG_D8(80), DF11_WG_D8(88), DF11_WG_D8(96), \
      DF11_WG_D8(104), DF11_WG_D8(112), DF11_WG_D8(120)
#define DF11_WG_R128                                                             \
  DF11_WG_R64                                                                    \
  ","                                                                            \
  "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,"             \
  "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,"             \
  "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111," \
  "%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127"
// wgmma_ra<N>: `regs` and `outs` the accumulators (N / 2), `a`, `desc` and `one` the operand
// numbers of A's four registers, B's descriptor and the flag that adds to the accumulators.
#define DF11_WGMMA_RA(N, regs, a, desc, one, outs)                                            \
  template <>                                                                                 \
  __device__ __forceinline__ void wgmma_ra<N>(float(&d)[N / 2], uint32_t a0, uint32_t a1,     \
                                              uint32_t a2, uint32_t a3, uint64_t db) {        \
    asm volatile(                                                                             \
        "{\n"                                                                                 \
        ".reg .pred p;\n"                                                                     \
        "setp.ne.b32 p, " one                                                                 \
        ", 0;\n"                                                                              \
        "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 {" regs "}, {" a "}, " desc \
        ", p, 1, 1, 0;\n"                                                                     \
        "}\n"                                                                                 \
        : outs                                                                                \
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(1));                               \
  }
DF11_WGMMA_RA(48, DF11_WG_R24, "%24,%25,%26,%27", "%28", "%29", DF11_WG_D24)
DF11_WGMMA_RA(64, DF11_WG_R32, "%32,%33,%34,%35", "%36", "%37", DF11_WG_D32)
DF11_WGMMA_RA(96, DF11_WG_R48, "%48,%49,%50,%51", "%52", "%53", DF11_WG_D48)
DF11_WGMMA_RA(112, DF11_WG_R56, "%56,%57,%58,%59", "%60", "%61", DF11_WG_D56)
DF11_WGMMA_RA(128, DF11_WG_R64, "%64,%65,%66,%67", "%68", "%69", DF11_WG_D64)
#if DF11_EXEC_WG_MAX >= 256
DF11_WGMMA_RA(256, DF11_WG_R128, "%128,%129,%130,%131", "%132", "%133", DF11_WG_D128)
#endif
#undef DF11_WGMMA_RA
#undef DF11_WG_R128
#undef DF11_WG_D128
#undef DF11_WG_R64
#undef DF11_WG_D64
#undef DF11_WG_R56
#undef DF11_WG_R32
#undef DF11_WG_R24
#undef DF11_WG_D32
#undef DF11_WG_D24
#undef DF11_WG_R48
#undef DF11_WG_D56
#undef DF11_WG_D48
#undef DF11_WG_D8

// The first four exceptions of a tile whose offsets are `offs` (byte i in bits 8i..8i + 7),
// none read past the tile's range or the blob's count.
__device__ __forceinline__ uint32_t wg_window(const uint8_t* exc, uint2 offs, uint32_t n_exc) {
  const uint32_t a = min(offs.x, n_exc), b = min(max(offs.y, a), n_exc);
  uint32_t w = 0;
#pragma unroll
  for (uint32_t k = 0; k < 4; ++k) {
    if (k < b - a) w |= uint32_t{__ldg(exc + a + k)} << (8 * k);
  }
  return w;
}
// Where a warpgroup kernel's block and thread stand: the matrix, the block's slice of tiles,
// chunk of X and group of 8 strips (block = (group x chunks + chunk) x slices + slice), the
// warp's strip; `n` rows of X a chunk.
struct WgBlock {
  uint32_t mi, tiles, steps, cols, batch, slices, slice, group;
  ExecWgSlice sl;
  uint32_t qa, qb, n_steps;       // the slice's steps [qa, qb)
  uint32_t first_row, live_rows;  // of X: the chunk's first, how many it holds
  uint32_t warp, lane, g, t, strip;
  bool live;             // the warp has a strip of the matrix
  uint32_t whole_x;      // steps of the slice whose 32 columns of X all exist
  uint64_t first_entry;  // the lane's first byte-plane entry
};
__device__ __forceinline__ WgBlock wg_block(const LaunchParams& p, uint32_t n) {
  WgBlock b{};
  b.mi = find_matrix(p, blockIdx.x);
  const MatrixDesc& m = p.m[b.mi];
  const uint32_t item = blockIdx.x - p.begin[b.mi];
  b.tiles = m.tiles_per_strip;
  b.steps = m.steps;
  b.cols = m.cols;
  b.batch = p.batch;
  b.slices = exec_wg_slices(b.tiles);
  const uint32_t chunks = (b.batch + n - 1) / n;
  b.slice = item % b.slices;
  const uint32_t chunk = (item / b.slices) % chunks;
  b.group = item / b.slices / chunks;
  b.sl = exec_wg_slice(b.tiles, b.slices, b.slice);
  b.qa = b.sl.first * kExecTileSteps;
  b.qb = min(b.sl.end * kExecTileSteps, b.steps);
  b.n_steps = b.qb - b.qa;
  b.first_row = chunk * n;
  b.live_rows = min(b.batch - b.first_row, n);
  b.warp = threadIdx.x / 32;
  b.lane = threadIdx.x % 32;
  b.g = b.lane / 4;
  b.t = b.lane % 4;
  b.strip = b.group * 8 + b.warp;
  b.live = b.strip < (m.rows + kExecStripRows - 1) / kExecStripRows;
  const uint32_t full_steps = b.cols / kExecStepCols;
  b.whole_x = full_steps > b.qa ? full_steps - b.qa : 0u;
  b.first_entry = (uint64_t{b.live ? b.strip : 0} * b.steps + b.qa) * kExecLanes + b.lane;
  return b;
}

// A warp's walk over its slice of its strip's tiles in the warpgroup kernels: each tile's
// exception range and its first four exceptions (the window) read a tile ahead, and each
// step's weights decoded into the registers of the products' A operand.
struct WgWalk {
  uint32_t cursor = 0, end = 0, win = 0, win_next = 0;
  bool overrun = false;
  uint2 offs_cur = make_uint2(0, 0), offs_next = make_uint2(0, 0);
  uint32_t u = 0;  // the tile, within the strip

  // `tile0`: the strip's first tile; `go`: the warp has a strip and the slice steps.
  __device__ __forceinline__ void begin(const MatrixDesc& m, uint64_t tile0, ExecWgSlice sl,
                                        const uint8_t* exc, uint32_t n_exc, bool go) {
    u = sl.first;
    if (!go) return;
    const uint64_t tile = tile0 + sl.first;
    offs_cur = load_tile_offsets(m, tile);
    win_next = wg_window(exc, offs_cur, n_exc);
    if (sl.first + 1 < sl.end) offs_next = load_tile_offsets(m, tile + 1);
  }
  // At step s, the first of a tile: the tile before checked, this one's range and window.
  __device__ __forceinline__ void tile_start(const LaunchParams& p, const MatrixDesc& m,
                                             uint64_t tile0, ExecWgSlice sl, uint32_t s,
                                             uint32_t lane) {
    u = sl.first + s / kExecTileSteps;
    const uint64_t tile = tile0 + u;
    if (s != 0) {
      if (lane == 0 && (overrun || cursor != end)) {
        exec_report(p.status, m.index, tile - 1, kExecBadTileCount);
      }
      offs_cur = offs_next;  // read a tile ago
    }
    overrun = false;
    tile_range_of(p, m, tile, offs_cur, lane, &cursor, &end);
    win = win_next;
    if (s != 0 && u + 1 < sl.end) offs_next = load_tile_offsets(m, tile + 1);
  }
  // The step's weights from the lane's codes (`in_tile`: the step within its tile; `c0`: the
  // lane's first column, masked past `cols` where `ragged`).
  __device__ __forceinline__ LaneWeights decode(const LaneCodes& lc, uint32_t in_tile,
                                                ExecWgSlice sl, const uint8_t* exc, uint32_t n_exc,
                                                uint32_t base4, uint32_t lane, bool ragged,
                                                uint64_t c0, uint32_t cols) {
    if (in_tile == kExecTileSteps / 2 && u + 1 < sl.end) {
      win_next = wg_window(exc, offs_next, n_exc);  // the next tile's, read mid-tile
    }
    const LaneCodeBytes k = exec_split_codes(lc.codes);
    uint32_t e[4];
#pragma unroll
    for (uint32_t w = 0; w < 4; ++w) e[w] = exec_exponents(k.c[w], base4);
    if (__any_sync(kExecFullMask, exec_exception_flags(k) != 0)) {
      cursor += exec_patch_exceptions<uint32_t>(k, e, exc, cursor, end, lane, overrun, offs_cur.x,
                                                win, 4u);
    }
    LaneWeights lw = exec_build(lc.bytes, e);
    if (ragged) mask_columns(lw, c0, cols);
    return lw;
  }
  // After the walk: the last tile checked (`last`: its index in the matrix).
  __device__ __forceinline__ void finish(const LaunchParams& p, const MatrixDesc& m, uint64_t last,
                                         uint32_t lane) const {
    if (lane == 0 && (overrun || cursor != end)) {
      exec_report(p.status, m.index, last, kExecBadTileCount);
    }
  }
};

// The reference's step: the strip's BF16 weights of rows g and 8 + g from column c.
__device__ __forceinline__ LaneWeights wg_reference_weights(const uint16_t* wsrc,
                                                            const MatrixDesc& m, uint32_t strip,
                                                            uint32_t g, uint64_t c) {
  LaneWeights lw;
  const uint64_t row = uint64_t{strip} * kExecStripRows + g;
  bf16_row8(wsrc, m.rows, m.cols, row, c, m.w_vec, lw.pg);
  bf16_row8(wsrc, m.rows, m.cols, row + 8, c, m.w_vec, lw.pg8);
  return lw;
}

// The step's weights in the products' A registers: decoded from the lane's codes at shared
// addresses `bytes` and `codes` (the walk's exceptions patched in), or the reference's BF16.
template <bool kExec>
__device__ __forceinline__ LaneWeights wg_step_weights(WgWalk& walk, const WgBlock& b,
                                                       const MatrixDesc& m, uint32_t s,
                                                       uint32_t bytes, uint32_t codes,
                                                       const uint8_t* exc, uint32_t n_exc,
                                                       uint32_t base4) {
  const uint64_t c0 = uint64_t{b.qa + s} * kExecStepCols + 8 * b.t;
  if constexpr (kExec) {
    if (!b.live) return LaneWeights{};
    return walk.decode(ld_shared_lane(bytes, codes), s % kExecTileSteps, b.sl, exc, n_exc, base4,
                       b.lane, s >= b.whole_x, c0, b.cols);
  } else {
    return wg_reference_weights(reinterpret_cast<const uint16_t*>(m.blob), m, b.strip, b.g, c0);
  }
}

// The step's two m64nNk16 products: planes 2h, 2h + 1 of the step at shared offset `at`.
template <uint32_t N>
__device__ __forceinline__ void wg_step_products(float (&acc)[N / 2], const LaneWeights& lw,
                                                 uint64_t desc_b, uint32_t at, uint32_t plane) {
  wg_fence();
#pragma unroll
  for (uint32_t h = 0; h < 2; ++h) {
    const uint64_t db = desc_b + ((at + 2 * h * plane) >> 4);
    wgmma_ra<N>(acc, lw.pg[2 * h], lw.pg8[2 * h], lw.pg[2 * h + 1], lw.pg8[2 * h + 1], db);
  }
  wg_commit();
}

// The walk's end, with every copy landed and the block's shared memory free: the partial sums
// as sums[token][row] (row of the group's 128, token of the chunk: the accumulators of an
// m64nN product, rows 16 wi + g (+ 8) of the warpgroup's 64, tokens 8i + 2t (+ 1)); the
// cluster's slices added in slice order, rounded once to BF16 into Y.
template <uint32_t N>
__device__ __forceinline__ void wg_write_out(const float (&acc)[N / 2], float* sums,
                                             const MatrixDesc& m, uint32_t batch,
                                             uint32_t first_row, uint32_t group, uint32_t slices,
                                             uint32_t slice) {
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t g = lane / 4, t = lane % 4;
  const uint32_t row0 = 64 * (warp / 4) + 16 * (warp % 4) + g;
#pragma unroll
  for (uint32_t i = 0; i < N / 8; ++i) {
#pragma unroll
    for (uint32_t jj = 0; jj < 2; ++jj) {
      const uint32_t token = 8 * i + 2 * t + jj;
      sums[token * kWgSumStride + row0] = acc[4 * i + jj];
      sums[token * kWgSumStride + row0 + 8] = acc[4 * i + 2 + jj];
    }
  }
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();  // every slice's partials are written
  constexpr uint32_t kOut = kExecWgRows * N;
  const uint32_t share = kOut / slices, from = slice * share;
  const uint32_t to = slice + 1 == slices ? kOut : from + share;
  for (uint32_t at = from + threadIdx.x; at < to; at += kWgThreads) {
    const uint32_t token = at / kExecWgRows, row = at % kExecWgRows;
    const uint32_t j = first_row + token;
    const uint64_t out_row = uint64_t{group} * kExecWgRows + row;
    if (out_row >= m.rows || j >= batch) continue;
    float v = 0.0f;
    for (uint32_t r = 0; r < slices; ++r) {
      const float part = cluster.map_shared_rank(sums, r)[token * kWgSumStride + row];
      v = r == 0 ? part : __fadd_rn(v, part);
    }
    m.y[uint64_t{j} * m.ld_y + out_row] = __bfloat16_as_ushort(__float2bfloat16_rn(v));
  }
  cluster.sync();  // no block leaves while another reads its shared memory
}
#endif

template <bool kExec, uint32_t N>
__global__ void __launch_bounds__(kWgThreads, kExec ? wg_min_blocks(N) : 1)
    wg_gemm_kernel(const __grid_constant__ LaunchParams p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr uint32_t kAcc = N / 2;
  constexpr uint32_t kPlane = wg_plane_bytes(N), kStep = wg_step_bytes(N);
  constexpr uint32_t kStage = wg_stage_bytes(N), kRing = kWgBufs * kStage;
  static_assert(N % 16 == 0, "X is copied 16 rows apart, two rows a warp");
  constexpr uint32_t kCopies = N / 16;  // a warp's copies of X per step, two rows of X each
  extern __shared__ __align__(128) uint8_t wg_shared[];
  const WgBlock blk = wg_block(p, N);
  const auto& [mi, tiles, steps, cols, batch, slices, slice, group, sl, qa, qb, n_steps, first_row,
               live_rows, warp, lane, g, t, strip, live, whole_x, first_entry] = blk;
  const MatrixDesc& m = p.m[mi];
  const uint32_t n_exc = m.n_exc;
  const bool x_vec = m.x_vec;
  const uint8_t* const exc = m.blob + m.exceptions;
  const uint4* lane_bytes = nullptr;
  uint32_t base4 = 0;
  if constexpr (kExec) {
    lane_bytes = reinterpret_cast<const uint4*>(m.blob + m.byte_plane) + first_entry;
    base4 = read_base(p, m, uint64_t{group} * 8 * tiles, threadIdx.x == 0) * 0x01010101u;
  }
  const uint32_t smem = static_cast<uint32_t>(__cvta_generic_to_shared(wg_shared));
  // B at stage 0, step 0, plane 0: core matrices adjacent along K a plane apart, along N 128
  // bytes apart.
  const uint64_t desc_b = wg_desc(smem, kPlane, 128);
  // This lane's copies of X: pair word xw of a step of rows j0 + 16c of the chunk (c <
  // kCopies), into plane xw % 4 at word xw / 4 of the row's 16 bytes.
  const uint32_t xw = lane % 16, j0 = 2 * warp + lane / 16;
  const uint32_t x_dst = (xw % 4) * kPlane + (j0 / 8) * 128 + (j0 % 8) * 16 + (xw / 4) * 4;
  const uint16_t* const x_src = m.x + uint64_t{first_row + (j0 < live_rows ? j0 : 0)} * cols +
                                uint64_t{qa} * kExecStepCols + 2 * xw;
  // Step s's X into the step slot at byte offset `at`: the lane's copies in turn, 16 rows of
  // X apart; in the chunk that ends the batch those of rows past it write zeros. Every word of
  // a slot is written once a stage, by one thread.
  const uint32_t x_rows16 = 16 * cols;
  const uint32_t x_dst0 = smem + x_dst;
  const uint32_t x_live = j0 < live_rows ? (live_rows - j0 + 15) / 16 : 0u;  // copies with a row
  const bool x_full = live_rows == N;
  auto copy_x = [&](uint32_t s, uint32_t at) {
    const uint16_t* src = x_src + s * kExecStepCols;
    const uint32_t dst = x_dst0 + at;
    if (x_vec && s < whole_x) {
      if (x_full) {
#pragma unroll
        for (uint32_t c = 0; c < kCopies; ++c, src += x_rows16) cp_async4(dst + 256 * c, src, 4);
      } else {
#pragma unroll
        for (uint32_t c = 0; c < kCopies; ++c, src += x_rows16) {
          cp_async4(dst + 256 * c, src, c < x_live ? 4u : 0u);
        }
      }
    } else {
      // The ragged last step, or X not aligned: plain loads, zero past cols.
      const uint32_t col = (qa + s) * kExecStepCols + 2 * xw;  // the lane's pair's first column
#pragma unroll
      for (uint32_t c = 0; c < kCopies; ++c, src += x_rows16) {
        const bool row = c < x_live;
        const uint32_t lo = row && col < cols ? __ldg(src) : 0u;
        const uint32_t hi = row && col + 1 < cols ? __ldg(src + 1) : 0u;
        st_shared_u32(dst + 256 * c, lo | hi << 16);
      }
    }
  };
  float acc[kAcc];
#pragma unroll
  for (uint32_t i = 0; i < kAcc; ++i) acc[i] = 0.0f;

  // W's blob: this warp's step s into the step slot of its part of the stage at `at`: the
  // lane's byte-plane entry, and a 16-byte piece of the step's code plane (lanes 0-15).
  const uint32_t w_warp = smem + kRing + warp * kWgWWarp;
  const uint8_t* const code_src = m.blob + m.code_plane +
                                  (uint64_t{live ? strip : 0} * steps + qa) * (kExecLanes * 8) +
                                  16 * lane;
  const uint32_t w_bytes = w_warp + 16 * lane, w_codes = w_warp + kWgSx * kExecLanes * 16;
  auto copy_w = [&](uint32_t s, uint32_t at) {
    if (!kExec || !live) return;
    const uint32_t i = s % kWgSx;
    cp_async16s(w_bytes + at + i * (kExecLanes * 16), lane_bytes + s * kExecLanes);
    if (lane < 16) {
      cp_async16s(w_codes + at + i * (kExecLanes * 8) + 16 * lane, code_src + s * (kExecLanes * 8));
    }
  };
  // A whole stage from step s0 on, issued at its slot's first step: each row of X's pointer
  // serves the stage's steps (immediate offsets), which takes a third of the instructions of
  // copying step by step.
  auto copy_stage = [&](uint32_t s0, uint32_t xat, uint32_t wat) {
    if (x_vec && s0 + kWgSx <= whole_x && s0 + kWgSx <= n_steps) {
      const uint16_t* src = x_src + s0 * kExecStepCols;
      const uint32_t dst = x_dst0 + xat;
#pragma unroll
      for (uint32_t c = 0; c < kCopies; ++c, src += x_rows16) {
        const uint32_t n = x_full || c < x_live ? 4u : 0u;
#pragma unroll
        for (uint32_t i = 0; i < kWgSx; ++i) {
          cp_async4(dst + 256 * c + i * kStep, src + i * kExecStepCols, n);
        }
      }
    } else {
#pragma unroll
      for (uint32_t i = 0; i < kWgSx; ++i) {
        if (s0 + i < n_steps) copy_x(s0 + i, xat + i * kStep);
      }
    }
#pragma unroll
    for (uint32_t i = 0; i < kWgSx; ++i) {
      if (s0 + i < n_steps) copy_w(s0 + i, wat);
    }
  };
  // The first stages, one cp.async group each.
  for (uint32_t st = 0; st < kWgAhead; ++st) {
    for (uint32_t i = 0; i < kWgSx; ++i) {
      const uint32_t s = st * kWgSx + i;
      if (s < n_steps) {
        copy_x(s, st * kStage + i * kStep);
        copy_w(s, st * kWgWStage);
      }
    }
    cp_async_commit();
  }
  uint32_t x_at = kRing - kStage;             // the stage being multiplied (advanced first)
  uint32_t x_next = (kWgAhead - 1) * kStage;  // the stage being copied (advanced first)
  uint32_t w_at = (kWgBufs - 1) * kWgWStage, w_next = (kWgAhead - 1) * kWgWStage;
  // A tile's exception range and its first four exceptions (the window) are read a tile ahead.
  const uint64_t tile0 = uint64_t{strip} * tiles;
  WgWalk walk;
  if constexpr (kExec) walk.begin(m, tile0, sl, exc, n_exc, live && n_steps > 0);
    // kWgLoads steps per turn, unrolled: the ring's slots are static, and so are the registers
    // each product reads its weights from (ptxas keeps a product's A registers to itself for the
    // whole unrolled body, so a longer body costs 8 registers a step).
#pragma unroll 1
  for (uint32_t s0 = 0; s0 < n_steps; s0 += kWgLoads) {
#pragma unroll
    for (uint32_t i = 0; i < kWgLoads; ++i) {
      const uint32_t s = s0 + i;
      if (s >= n_steps) break;  // block-uniform
      const uint32_t in_tile = s % kExecTileSteps;
      if constexpr (kExec) {
        if (in_tile == 0 && live) walk.tile_start(p, m, tile0, sl, s, lane);
      }
      if (s % kWgSx == 0) {
        // A new stage: its X and W have arrived (every thread's copies, made visible to the
        // products). After the barrier no warp multiplies the stage before the last, whose
        // slot takes the stage kWgAhead ahead.
        if (s != 0) cp_async_commit();
        cp_async_wait<kWgAhead - 1>();
        wg_fence_shared();
        __syncthreads();
        x_at = x_at + kStage == kRing ? 0u : x_at + kStage;
        x_next = x_next + kStage == kRing ? 0u : x_next + kStage;
        w_at = w_at + kWgWStage == kWgBufs * kWgWStage ? 0u : w_at + kWgWStage;
        w_next = w_next + kWgWStage == kWgBufs * kWgWStage ? 0u : w_next + kWgWStage;
      }
      const uint32_t step_in = s % kWgSx;
      const LaneWeights lw = wg_step_weights<kExec>(
          walk, blk, m, s, w_bytes + w_at + step_in * (kExecLanes * 16),
          w_codes + w_at + step_in * (kExecLanes * 8) + 8 * lane, exc, n_exc, base4);
      // The last step's products are done (their weights' registers are free).
      wg_wait<0>();
      wg_hold(acc);
      const uint32_t slot = step_in * kStep;
      if (step_in == 0 && s + kWgAhead * kWgSx < n_steps) {
        copy_stage(s + kWgAhead * kWgSx, x_next, w_next);
      }
      wg_step_products<N>(acc, lw, desc_b, x_at + slot, kPlane);
    }
  }
  wg_wait<0>();
  wg_hold(acc);
  if constexpr (kExec) {
    if (live && n_steps > 0) walk.finish(p, m, tile0 + (qb - 1) / kExecTileSteps, lane);
  }
  cp_async_wait<0>();
  __syncthreads();  // the ring is free: the partials take its place
  wg_write_out<N>(acc, reinterpret_cast<float*>(wg_shared), m, batch, first_row, group, slices,
                  slice);
#else
  __trap();  // launched only where the build has sm_90a code (launch_gemms)
#endif
}

// ---- The warpgroup kernel with bulk copies (EXEC_KERNEL.md, "A peer's warpgroup kernel") ----
//
// wg_gemm_kernel's products, order and partial sums, with the copies done by the bulk-copy
// unit (EXEC_KERNEL.md, v25): per stage the chunk's X is one tensor-map copy of 64 columns x
// N rows (128-byte swizzle, zeros past X's ends; with DF11_EXEC_WGB_TMAP=0 one cp.async.bulk
// per row present instead), each warp's stage of its strip's byte plane and code plane two
// bulk copies (its lane 0); X and W land in rings of their own, each slot completing on its
// mbarrier. At the stage's start the block moves the staged X into the products' planes (one
// row and step a thread: four 16-byte loads, four 16-byte stores), so the planes hold what
// wg_gemm_kernel's copies write, and the products read the same operands. Taken where every
// matrix's X is 16-byte aligned with cols % 8 == 0 (x_vec); else wg_gemm_kernel.
#ifndef DF11_EXEC_WG_BULK
#define DF11_EXEC_WG_BULK 1  // 0: wg_gemm_kernel's per-lane copies
#endif
static_assert(kWgSx == 2, "a staged row is one stage's 64 columns");
#ifndef DF11_EXEC_WGB_TMAP
#define DF11_EXEC_WGB_TMAP 1  // 0: X by one bulk copy per row (slower: v25)
#endif
#ifndef DF11_EXEC_WGB_XSLOTS
#define DF11_EXEC_WGB_XSLOTS 2  // staging slots of X: copies XSLOTS - 1 stages ahead
#endif
#ifndef DF11_EXEC_WGB_WSLOTS
#define DF11_EXEC_WGB_WSLOTS 2  // slots of W's blob: copies WSLOTS - 1 stages ahead
#endif
// A staged row: 128 bytes (swizzled by the tensor map) or 144 (128 and 16 of padding: a quarter
// warp's rows in distinct banks).
constexpr uint32_t kWgbRowBytes = DF11_EXEC_WGB_TMAP ? 128 : 144;
constexpr uint32_t kWgbStageCols = kWgSx * kExecStepCols;
constexpr uint32_t wgb_staging_bytes(uint32_t n) { return n * kWgbRowBytes; }
// Shared memory: the planes' ring of 3 stages (a stage's planes are rewritten three stages
// later, after every warp has waited for the products that read them), the staging ring of X
// and the ring of W's blob (each copied its slots - 1 stages ahead), their slots' mbarriers,
// and 1024 bytes to align the rings.
constexpr uint32_t kWgbPlaneSlots = 3;
constexpr uint32_t kWgbXSlots = DF11_EXEC_WGB_XSLOTS, kWgbWSlots = DF11_EXEC_WGB_WSLOTS;
static_assert(kWgbXSlots >= 2 && kWgbWSlots >= 2, "copies run at least one stage ahead");
constexpr size_t wgb_shared_bytes(uint32_t n) {
  const size_t ring = size_t{kWgbPlaneSlots} * wg_stage_bytes(n) +
                      size_t{kWgbXSlots} * wgb_staging_bytes(n) + size_t{kWgbWSlots} * kWgWStage +
                      8 * (kWgbXSlots + kWgbWSlots) + 1024;
  const size_t sums = size_t{kWgSumStride} * n * sizeof(float);
  return ring > sums ? ring : sums;
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void wgb_mbar_init(uint32_t mbar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(mbar), "r"(count) : "memory");
}
__device__ __forceinline__ void wgb_expect(uint32_t mbar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(mbar),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void wgb_copy(uint32_t dst, const void* src, uint32_t bytes,
                                         uint32_t mbar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(dst),
      "l"(__cvta_generic_to_global(src)), "r"(bytes), "r"(mbar)
      : "memory");
}
__device__ __forceinline__ void wgb_wait(uint32_t mbar, uint32_t parity) {
  asm volatile(
      "{\n\t.reg .pred done;\n"
      "wgb_wait_%=:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
      "@!done bra wgb_wait_%=;\n\t}" ::"r"(mbar),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ uint4 ld_shared_u4(uint32_t a) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(a)
               : "memory");
  return v;
}
__device__ __forceinline__ void st_shared_u4(uint32_t a, uint4 v) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}
#endif

// The launch's parameters and, with DF11_EXEC_WGB_TMAP, a tensor map of each matrix's X.
struct WgbParams {
  LaunchParams p;
#if DF11_EXEC_WGB_TMAP
  CUtensorMap x[kMaxMatrices];
#endif
};

// Two blocks a multiprocessor up to 128 rows: its copies need fewer registers than
// wg_gemm_kernel's, and its shared memory (105 KB at 128 rows) fits twice.
constexpr uint32_t wgb_min_blocks(uint32_t n) { return n <= 128 ? 2 : 1; }

template <bool kExec, uint32_t N>
__global__ void __launch_bounds__(kWgThreads, kExec ? wgb_min_blocks(N) : 1)
    wgb_gemm_kernel(const __grid_constant__ WgbParams params) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  const LaunchParams& p = params.p;
  constexpr uint32_t kAcc = N / 2;
  constexpr uint32_t kPlane = wg_plane_bytes(N), kStep = wg_step_bytes(N);
  constexpr uint32_t kStage = wg_stage_bytes(N), kPlanes = kWgbPlaneSlots * kStage;
  constexpr uint32_t kStaging = wgb_staging_bytes(N);
  constexpr uint32_t kStagingAt = kPlanes, kWAt = kStagingAt + kWgbXSlots * kStaging;
  constexpr uint32_t kBarAt = kWAt + kWgbWSlots * kWgWStage;
  static_assert(N % 16 == 0 && N <= 8 * 32, "rows of X: 8 warps of 32 lanes");
  extern __shared__ __align__(128) uint8_t wg_shared[];
  const WgBlock blk = wg_block(p, N);
  const auto& [mi, tiles, steps, cols, batch, slices, slice, group, sl, qa, qb, n_steps, first_row,
               live_rows, warp, lane, g, t, strip, live, whole_x, first_entry] = blk;
  const MatrixDesc& m = p.m[mi];
  const uint32_t n_exc = m.n_exc;
  const uint8_t* const exc = m.blob + m.exceptions;
  const uint32_t n_stages = (n_steps + kWgSx - 1) / kWgSx;
  uint32_t base4 = 0;
  if constexpr (kExec) {
    base4 = read_base(p, m, uint64_t{group} * 8 * tiles, threadIdx.x == 0) * 0x01010101u;
  }
  // The rings from a 1024-byte boundary (the tensor map's swizzle repeats every 1024 bytes).
  const uint32_t smem =
      (static_cast<uint32_t>(__cvta_generic_to_shared(wg_shared)) + 1023u) & ~1023u;
  const uint64_t desc_b = wg_desc(smem, kPlane, 128);
  const uint32_t bx = smem + kBarAt, bw = bx + 8 * kWgbXSlots;  // the rings' mbarriers

  // Staging rows never copied (past the batch) stay zero; then the barriers.
  if constexpr (!DF11_EXEC_WGB_TMAP) {
    for (uint32_t at = threadIdx.x * 16; at < kWgbXSlots * kStaging; at += kWgThreads * 16) {
      st_shared_u4(smem + kStagingAt + at, make_uint4(0, 0, 0, 0));
    }
  }
  if (threadIdx.x == 0) {
    for (uint32_t b = 0; b < kWgbXSlots; ++b) wgb_mbar_init(bx + 8 * b, DF11_EXEC_WGB_TMAP ? 1 : 8);
    for (uint32_t b = 0; b < kWgbWSlots; ++b) wgb_mbar_init(bw + 8 * b, 8);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  // Stage k's X into staging slot k % kWgbXSlots: one tensor-map copy (thread 0), or each row
  // of X present (rows warp + 8i, lane i) after its warp's lane 0 expected their bytes.
  const uint32_t x_row = warp + 8 * lane;  // of the chunk
  [[maybe_unused]] const uint32_t warp_rows = live_rows > warp ? (live_rows - warp + 7) / 8 : 0u;
  [[maybe_unused]] const uint16_t* const x_src =
      m.x + uint64_t{first_row + (x_row < live_rows ? x_row : 0)} * cols +
      uint64_t{qa} * kExecStepCols;
  auto copy_x = [&](uint32_t k) {
    const uint32_t slot = k % kWgbXSlots, mbar = bx + 8 * slot;
    const uint32_t dst = smem + kStagingAt + slot * kStaging;
    const uint32_t col0 = (qa + k * kWgSx) * kExecStepCols;
#if DF11_EXEC_WGB_TMAP
    if (threadIdx.x == 0) {
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      wgb_expect(mbar, N * 128);
      asm volatile(
          "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], "
          "[%1, {%2, %3}], [%4];" ::"r"(dst),
          "l"(reinterpret_cast<uint64_t>(&params.x[mi])), "r"(col0), "r"(first_row), "r"(mbar)
          : "memory");
    }
#else
    const uint32_t x_bytes = 2 * min(kWgbStageCols, cols - col0);  // a multiple of 16 (x_vec)
    if (lane == 0) {
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      wgb_expect(mbar, warp_rows * x_bytes);
    }
    __syncwarp();
    if (lane < warp_rows) {
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      wgb_copy(dst + x_row * kWgbRowBytes, x_src + uint64_t{k * kWgSx} * kExecStepCols, x_bytes,
               mbar);
    }
#endif
  };
  // Stage k's byte and code planes of the warp's strip into W slot k % kWgbWSlots (lane 0).
  const uint8_t* const bytes_src = m.blob + m.byte_plane + first_entry * 16 - lane * 16;
  const uint8_t* const codes_src =
      m.blob + m.code_plane + (uint64_t{live ? strip : 0} * steps + qa) * (kExecLanes * 8);
  auto copy_w = [&](uint32_t k) {
    if (lane != 0) return;
    const uint32_t slot = k % kWgbWSlots, mbar = bw + 8 * slot;
    const uint32_t s0 = k * kWgSx, ns = min(kWgSx, n_steps - s0);
    const uint32_t w_bytes = kExec && live ? ns * kExecLanes * 24 : 0u;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    wgb_expect(mbar, w_bytes);
    if (w_bytes != 0) {
      const uint32_t w = smem + kWAt + slot * kWgWStage + warp * kWgWWarp;
      wgb_copy(w, bytes_src + uint64_t{s0} * (kExecLanes * 16), ns * kExecLanes * 16, mbar);
      wgb_copy(w + kWgSx * kExecLanes * 16, codes_src + uint64_t{s0} * (kExecLanes * 8),
               ns * kExecLanes * 8, mbar);
    }
  };
  for (uint32_t k = 0; k + 1 < kWgbXSlots && k < n_stages; ++k) copy_x(k);
  for (uint32_t k = 0; k + 1 < kWgbWSlots && k < n_stages; ++k) copy_w(k);

  float acc[kAcc];
#pragma unroll
  for (uint32_t i = 0; i < kAcc; ++i) acc[i] = 0.0f;
  const uint32_t w_bytes_at = kWAt + warp * kWgWWarp + 16 * lane;
  const uint32_t w_codes_at = kWAt + warp * kWgWWarp + kWgSx * kExecLanes * 16 + 8 * lane;
  uint32_t x_at = 0, w_at = 0;
  const uint64_t tile0 = uint64_t{strip} * tiles;
  WgWalk walk;
  if constexpr (kExec) walk.begin(m, tile0, sl, exc, n_exc, live && n_steps > 0);
#pragma unroll 1
  for (uint32_t s0 = 0; s0 < n_steps; s0 += kWgLoads) {
#pragma unroll
    for (uint32_t i = 0; i < kWgLoads; ++i) {
      const uint32_t s = s0 + i;
      if (s >= n_steps) break;  // block-uniform
      const uint32_t in_tile = s % kExecTileSteps;
      if constexpr (kExec) {
        if (in_tile == 0 && live) walk.tile_start(p, m, tile0, sl, s, lane);
      }
      if (s % kWgSx == 0) {
        // A new stage k: its X has landed and goes into the planes' slot k % 3 (whose
        // products, three stages back, every warp has waited for); after one barrier the
        // staging and W slots of stage k - 1 are free for the stages XSLOTS - 1 and WSLOTS - 1
        // ahead; then the stage's W has landed.
        const uint32_t k = s / kWgSx, slot = k % kWgbXSlots;
        wgb_wait(bx + 8 * slot, (k / kWgbXSlots) & 1u);
        x_at = (k % kWgbPlaneSlots) * kStage;
        w_at = (k % kWgbWSlots) * kWgWStage;
        const uint32_t staging = smem + kStagingAt + slot * kStaging;
        const uint32_t col0 = (qa + s) * kExecStepCols;
        for (uint32_t r = threadIdx.x; r < kWgSx * N; r += kWgThreads) {
          const uint32_t row = r % N, st = r / N;
          const uint32_t src = staging + row * kWgbRowBytes + st * 64;
          uint4 c[4];
#pragma unroll
          for (uint32_t q = 0; q < 4; ++q) {
            // With the tensor map, 16-byte piece c of a row lies at c ^ (row % 8).
            c[q] = DF11_EXEC_WGB_TMAP
                       ? ld_shared_u4(staging + row * 128 + (((4 * st + q) ^ (row % 8)) * 16))
                       : ld_shared_u4(src + 16 * q);
          }
          if (!DF11_EXEC_WGB_TMAP && col0 + kWgbStageCols > cols) {  // zero past cols
#pragma unroll
            for (uint32_t q = 0; q < 4; ++q) {
              const uint32_t col = col0 + st * kExecStepCols + 8 * q;
              if (col + 0 >= cols) c[q].x = 0;
              if (col + 2 >= cols) c[q].y = 0;
              if (col + 4 >= cols) c[q].z = 0;
              if (col + 6 >= cols) c[q].w = 0;
            }
          }
          // Pair word P + 4q of the row (columns 8q + 2P, + 1) into plane P at word q.
          const uint32_t dst = smem + x_at + st * kStep + (row / 8) * 128 + (row % 8) * 16;
          st_shared_u4(dst + 0 * kPlane, make_uint4(c[0].x, c[1].x, c[2].x, c[3].x));
          st_shared_u4(dst + 1 * kPlane, make_uint4(c[0].y, c[1].y, c[2].y, c[3].y));
          st_shared_u4(dst + 2 * kPlane, make_uint4(c[0].z, c[1].z, c[2].z, c[3].z));
          st_shared_u4(dst + 3 * kPlane, make_uint4(c[0].w, c[1].w, c[2].w, c[3].w));
        }
        wg_fence_shared();
        __syncthreads();
        if (k + kWgbXSlots - 1 < n_stages) copy_x(k + kWgbXSlots - 1);
        if (k + kWgbWSlots - 1 < n_stages) copy_w(k + kWgbWSlots - 1);
        wgb_wait(bw + 8 * (k % kWgbWSlots), (k / kWgbWSlots) & 1u);  // the stage's W
      }
      const uint32_t step_in = s % kWgSx;
      const LaneWeights lw = wg_step_weights<kExec>(
          walk, blk, m, s, smem + w_bytes_at + w_at + step_in * (kExecLanes * 16),
          smem + w_codes_at + w_at + step_in * (kExecLanes * 8), exc, n_exc, base4);
      wg_wait<0>();
      wg_hold(acc);
      const uint32_t slot = step_in * kStep;
      wg_step_products<N>(acc, lw, desc_b, x_at + slot, kPlane);
    }
  }
  wg_wait<0>();
  wg_hold(acc);
  if constexpr (kExec) {
    if (live && n_steps > 0) walk.finish(p, m, tile0 + (qb - 1) / kExecTileSteps, lane);
  }
  __syncthreads();  // every copy has landed (each stage waited) and the rings are free
  wg_write_out<N>(acc, reinterpret_cast<float*>(wg_shared), m, batch, first_row, group, slices,
                  slice);
#else
  __trap();  // launched only where the build has sm_90a code (launch_gemms)
#endif
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
  d.ld_y = geo.rows;
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

// GEMM launches over descriptors (any count), blocks ordered by decreasing columns: the strip
// kernels (batch <= kStripMaxBatch), or the wide kernel (the fused GEMM from kWideFrom rows on).
// What the strip kernels' launch needs of the current device, asked of the driver once per
// device: whether they launch with programmatic stream serialization (DF11_EXEC_GEMM_PDL,
// compute capability 9.0 and later), and its multiprocessors.
struct StripDevice {
  bool programmatic = false;
  bool wg = false;  // the warpgroup kernel serves rows of X above 32 (sm_90a code, CC 9.0)
  uint32_t sms = 0;
};
#if defined(DF11_EXEC_WGMMA) && DF11_EXEC_WG != 0
constexpr bool kWgBuilt = true;
#else
constexpr bool kWgBuilt = false;
#endif
Status strip_device(StripDevice* out) {
  constexpr int kCached = 64;
  // Per device: 0 unknown, else sms << 2 | wg << 1 | programmatic.
  static std::atomic<uint32_t> known[kCached] = {};
  int device = 0;
  DF11_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "exec GEMM: cudaGetDevice");
  uint32_t k = device < kCached ? known[device].load(std::memory_order_relaxed) : 0;
  if (k == 0) {
    int major = 0, minor = 0, sms = 0;
    DF11_CUDA_RETURN_IF_ERROR(
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
        "exec GEMM: compute capability");
    DF11_CUDA_RETURN_IF_ERROR(
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device),
        "exec GEMM: compute capability");
    DF11_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                              "exec GEMM: multiprocessors");
    k = static_cast<uint32_t>(std::max(sms, 1)) << 2 |
        (kWgBuilt && major == 9 && minor == 0 ? 2u : 0u) |
        (DF11_EXEC_GEMM_PDL != 0 && major >= 9 ? 1u : 0u);
    if (device < kCached) known[device].store(k, std::memory_order_relaxed);
  }
  out->programmatic = (k & 1u) != 0;
  out->wg = (k & 2u) != 0;
  out->sms = k >> 2;
  return Status::ok();
}

// The strip kernel for a launch of `blocks` strips at `batch` rows of X (<= kStripMaxBatch).
using GemmKernel = void (*)(LaunchParams);
template <bool kExec>
GemmKernel strip_kernel(uint32_t batch, uint64_t blocks, uint32_t sms) {
  if constexpr (kExec && DF11_EXEC_GEMM_DEEP != 0) {
    if (batch > 8 && batch <= 16 && blocks <= uint64_t{sms} * DF11_EXEC_GEMM_DEEP_BLOCKS) {
      return gemm_kernel<true, 2, true>;
    }
  }
  return batch <= 8    ? gemm_kernel<kExec, 1>
         : batch <= 16 ? gemm_kernel<kExec, 2>
                       : gemm_kernel<kExec, 4>;
}

// A launch of `blocks` thread blocks in clusters of `cluster` consecutive blocks.
template <typename Kernel, typename Params>
Status launch_clusters(Kernel kernel, uint64_t blocks, uint32_t threads, size_t smem,
                       uint32_t cluster, const Params& p, cudaStream_t stream, const char* what) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<uint32_t>(blocks));
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1] = {};
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  DF11_CUDA_RETURN_IF_ERROR(cudaLaunchKernelEx(&cfg, kernel, p), what);
  return Status::ok();
}

#if DF11_EXEC_WGB_TMAP
using TensorMapEncode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                     const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                     const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                     CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
// The driver's tensor-map encoder, found once through the runtime; null where the driver has
// none (then the warpgroup kernel copies X per lane: the same products and outputs).
TensorMapEncode tensor_map_encoder() {
  static const TensorMapEncode encode = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();  // the query's error is not the caller's
      f = nullptr;
    }
    return reinterpret_cast<TensorMapEncode>(f);
  }();
  return encode;
}

// X [batch, cols] of `d` as a tensor map of boxes of 64 columns x `rows` rows, 128-byte swizzle,
// zeros past its ends.
Status encode_x_map(TensorMapEncode encode, CUtensorMap* map, const MatrixDesc& d, uint32_t batch,
                    uint32_t rows) {
  const cuuint64_t dims[2] = {d.cols, batch};
  const cuuint64_t strides[1] = {cuuint64_t{d.cols} * 2};
  const cuuint32_t box[2] = {kWgbStageCols, rows};
  const cuuint32_t one[2] = {1, 1};
  const CUresult r =
      encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<uint16_t*>(d.x), dims, strides,
             box, one, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    return Status(ErrorCode::kCuda,
                  "exec GEMM: cuTensorMapEncodeTiled failed (" + std::to_string(r) + ")");
  }
  return Status::ok();
}
#endif

// The warpgroup kernel's launches: one per count of slices (the cluster's size), blocks ordered
// by decreasing columns within it.
template <bool kExec>
Status launch_wg(std::vector<MatrixDesc> descs, uint32_t batch, ExecStatusRecord* status,
                 cudaStream_t stream) {
  const uint32_t mt = exec_wg_chunk_rows(batch);
#if DF11_EXEC_WGB_TMAP
  const TensorMapEncode encode = tensor_map_encoder();
  const bool encoder = encode != nullptr;
#else
  constexpr bool encoder = true;
#endif
  const bool bulk =
      DF11_EXEC_WG_BULK != 0 && encoder &&
      std::all_of(descs.begin(), descs.end(), [](const MatrixDesc& d) { return d.x_vec; });
  using WgbKernel = void (*)(WgbParams);
  GemmKernel kernel = nullptr;
  WgbKernel bkernel = nullptr;
  switch (mt) {
    case 48:
      kernel = wg_gemm_kernel<kExec, 48>;
      bkernel = wgb_gemm_kernel<kExec, 48>;
      break;
    case 64:
      kernel = wg_gemm_kernel<kExec, 64>;
      bkernel = wgb_gemm_kernel<kExec, 64>;
      break;
    case 96:
      kernel = wg_gemm_kernel<kExec, 96>;
      bkernel = wgb_gemm_kernel<kExec, 96>;
      break;
    case 112:
      kernel = wg_gemm_kernel<kExec, 112>;
      bkernel = wgb_gemm_kernel<kExec, 112>;
      break;
#if DF11_EXEC_WG_MAX >= 128
    case 128:
      kernel = wg_gemm_kernel<kExec, 128>;
      bkernel = wgb_gemm_kernel<kExec, 128>;
      break;
#endif
#if DF11_EXEC_WG_MAX >= 256
    case 256:
      kernel = wg_gemm_kernel<kExec, 256>;
      bkernel = wgb_gemm_kernel<kExec, 256>;
      break;
#endif
    default:
      return Status(ErrorCode::kInternal, "exec GEMM: no warpgroup kernel for the batch");
  }
  const size_t bytes = bulk ? wgb_shared_bytes(mt) : wg_shared_bytes(mt);
  if (bulk) {
    DF11_CUDA_RETURN_IF_ERROR(
        cudaFuncSetAttribute(bkernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(bytes)),
        "exec GEMM: shared memory of the warpgroup kernel");
  } else {
    DF11_CUDA_RETURN_IF_ERROR(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(bytes)),
        "exec GEMM: shared memory of the warpgroup kernel");
  }
  auto slices_of = [](const MatrixDesc& d) { return exec_wg_slices(d.tiles_per_strip); };
  std::stable_sort(descs.begin(), descs.end(), [&](const MatrixDesc& a, const MatrixDesc& b) {
    const uint32_t sa = slices_of(a), sb = slices_of(b);
    return sa != sb ? sa > sb : a.cols > b.cols;
  });
  auto bp = std::make_unique<WgbParams>();
  LaunchParams* p = &bp->p;
  p->status = status;
  p->batch = batch;
  for (size_t at = 0; at < descs.size();) {
    const uint32_t slices = slices_of(descs[at]);
    size_t n = 0;
    uint64_t blocks = 0;
    while (at + n < descs.size() && n < kMaxMatrices && slices_of(descs[at + n]) == slices) {
      const MatrixDesc& d = descs[at + n];
      p->m[n] = d;
      p->begin[n] = static_cast<uint32_t>(blocks);
      blocks += exec_wg_blocks(d.rows, d.tiles_per_strip, batch);
#if DF11_EXEC_WGB_TMAP
      if (bulk) DF11_RETURN_IF_ERROR(encode_x_map(encode, &bp->x[n], d, batch, mt));
#endif
      ++n;
    }
    if (blocks > INT32_MAX) {
      return Status(ErrorCode::kResourceLimit, "exec GEMM: too many rows in one launch");
    }
    p->n = static_cast<uint32_t>(n);
    p->begin[n] = static_cast<uint32_t>(blocks);
    if (bulk) {
      DF11_RETURN_IF_ERROR(launch_clusters(bkernel, blocks, kWgThreads, bytes, slices, *bp, stream,
                                           "exec GEMM: warpgroup kernel launch"));
    } else {
      DF11_RETURN_IF_ERROR(launch_clusters(kernel, blocks, kWgThreads, bytes, slices, *p, stream,
                                           "exec GEMM: warpgroup kernel launch"));
    }
    at += n;
  }
  return Status::ok();
}

template <bool kExec>
Status launch_gemms(std::vector<MatrixDesc> descs, uint32_t batch, ExecStatusRecord* status,
                    cudaStream_t stream) {
  if (exec_wg_takes(batch)) {
    StripDevice dev;
    DF11_RETURN_IF_ERROR(strip_device(&dev));
    if (dev.wg) return launch_wg<kExec>(std::move(descs), batch, status, stream);
  }
  const bool wide = kExec && batch >= kWideFrom;
  auto wide_kernel = wide_gemm_kernel<kWideN8, false>;
  size_t wide_bytes = 0;
  uint32_t wide_n8 = kWideN8;
  bool split = false;  // the cluster kernel (sm_90 and later)
  if (wide) {
    int device = 0, optin = 0, sms = 0, major = 0;
    DF11_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "exec GEMM: cudaGetDevice");
    DF11_CUDA_RETURN_IF_ERROR(
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
        "exec GEMM: compute capability");
    split = kWideSplit && major >= 9;
    DF11_CUDA_RETURN_IF_ERROR(
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
        "exec GEMM: shared memory per block");
    DF11_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                              "exec GEMM: multiprocessors");
    uint64_t large = 0;
    for (const MatrixDesc& d : descs) {
      large += exec_wide_blocks(exec_wide_shape(d.rows, batch, kWideWarps, 8 * kWideN8));
    }
    // The cluster kernel has kGemmWarps times the blocks: it keeps the large chunk.
    wide_n8 = split ? kSplitN8
                    : exec_wide_pick_n8(large, uint64_t(sms) * DF11_EXEC_WIDE_MIN_BLOCKS,
                                        kWideN8Small, kWideN8);
    const bool shared_sums =
        kWidePreferSharedSums && wide_shared_bytes(wide_n8, true) <= static_cast<size_t>(optin);
    if (wide_n8 == kWideN8) {
      wide_kernel =
          shared_sums ? wide_gemm_kernel<kWideN8, true> : wide_gemm_kernel<kWideN8, false>;
    } else {
      wide_kernel = shared_sums ? wide_gemm_kernel<kWideN8Small, true>
                                : wide_gemm_kernel<kWideN8Small, false>;
    }
    wide_bytes = wide_shared_bytes(wide_n8, shared_sums);
    if (split) {
      wide_kernel = split_gemm_kernel<kSplitN8>;
      wide_bytes = wide_shared_bytes(kSplitN8, false);  // the partials reuse X's stages
    }
    DF11_CUDA_RETURN_IF_ERROR(
        cudaFuncSetAttribute(wide_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(wide_bytes)),
        "exec GEMM: shared memory of the wide kernel");
  }
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
      const uint32_t rows = descs[at + i].rows;
      blocks += wide ? exec_wide_blocks(exec_wide_shape(rows, batch, kWideWarps, 8 * wide_n8)) *
                           (split ? kGemmWarps : 1)
                     : (uint64_t{rows} + kExecStripRows - 1) / kExecStripRows;
    }
    if (blocks > INT32_MAX) {
      return Status(ErrorCode::kResourceLimit, "exec GEMM: too many rows in one launch");
    }
    p->begin[n] = static_cast<uint32_t>(blocks);
    if (split) {
      // One block per partial.
      DF11_RETURN_IF_ERROR(launch_clusters(wide_kernel, blocks, kWideThreads, wide_bytes,
                                           kGemmWarps, *p, stream, "exec GEMM: cluster launch"));
    } else if (wide) {
      wide_kernel<<<static_cast<uint32_t>(blocks), kWideThreads, wide_bytes, stream>>>(*p);
    } else {
      StripDevice dev;
      DF11_RETURN_IF_ERROR(strip_device(&dev));
      const auto kernel = strip_kernel<kExec>(batch, blocks, dev.sms);
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(static_cast<uint32_t>(blocks));
      cfg.blockDim = dim3(kGemmThreads);
      cfg.stream = stream;
      cudaLaunchAttribute pdl[1] = {};
      pdl[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      pdl[0].val.programmaticStreamSerializationAllowed = 1;
      cfg.attrs = pdl;
      cfg.numAttrs = dev.programmatic ? 1 : 0;
      DF11_CUDA_RETURN_IF_ERROR(cudaLaunchKernelEx(&cfg, kernel, *p), "exec GEMM launch");
    }
    DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "exec GEMM kernel launch");
  }
  return Status::ok();
}

// The reference above kStripMaxBatch rows: the strip kernel on consecutive chunks of
// kStripMaxBatch rows of X and Y. Row j of Y depends only on W and row j of X, so each output
// is the strip kernel's sequence of products (spec 6).
Status launch_reference_chunks(const std::vector<MatrixDesc>& descs, uint32_t batch,
                               cudaStream_t stream) {
  for (uint32_t first = 0; first < batch; first += kStripMaxBatch) {
    std::vector<MatrixDesc> chunk = descs;
    for (MatrixDesc& d : chunk) {
      d.x += uint64_t{first} * d.cols;
      d.y += uint64_t{first} * d.ld_y;
    }
    DF11_RETURN_IF_ERROR(launch_gemms<false>(
        std::move(chunk), std::min(kStripMaxBatch, batch - first), nullptr, stream));
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
    if (gemms[i].ld_y != 0 && gemms[i].ld_y < d.rows) {
      return Status(ErrorCode::kInvalidArgument, what + ": ld_y " + std::to_string(gemms[i].ld_y) +
                                                     " is below its " + std::to_string(d.rows) +
                                                     " rows");
    }
    d.x = gemms[i].d_x;
    d.y = gemms[i].d_y;
    if (gemms[i].ld_y != 0) d.ld_y = gemms[i].ld_y;
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
  if (exec_wg_takes(batch)) {
    StripDevice dev;
    DF11_RETURN_IF_ERROR(strip_device(&dev));
    // There the fused GEMM's order is the warpgroup kernel's where it runs.
    if (dev.wg) return launch_gemms<false>(std::move(descs), batch, nullptr, stream);
  }
  return launch_reference_chunks(descs, batch, stream);
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
