// Fused decode+GEMV (include/df11/cuda_gemv.h; design in decoder/cuda/NOTES.md): the
// decode pipeline (decode_pipeline.cuh) with a sink that multiplies each block's decoded
// weights by x where they lie in shared memory, plus the plain BF16 reference GEMV and the
// reduction both share. The accumulation order lives in one place, accumulate_lane() and
// warp_sum() below, used by both kernels.
//
// Chunks and thread blocks: a chunk (kGemvChunk columns of one row) belongs to the thread
// block whose range of stream blocks holds its first weight. A chunk that crosses into the
// next stream block carries its 32 lane sums through a small per-thread-block buffer in the
// workspace; one that crosses the end of the range makes the thread block decode the next
// stream block too (needs_next_block), using only that chunk's weights from it.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda_error.h"
#include "decode_pipeline.cuh"
#include "decode_plan.h"
#include "df11/cuda_gemv.h"

namespace df11::cuda {
namespace detail {
namespace {

constexpr uint32_t kFusedMaxGroups = 64;    // per launch (kernel parameter space)
constexpr uint32_t kFusedMaxMembers = 256;  // per launch
constexpr uint32_t kChunk = kGemvChunk;

struct GemvMemberDesc {
  const uint16_t* x;
  uint16_t* y;
  uint64_t chunk_base;  // index of the member's first chunk among the plan's partials
  uint32_t start;       // first weight in its group
  uint32_t rows, cols, chunks_per_row;
};

struct GemvParams {
  float* partials;  // [chunk][batch]
  float* carry;     // [thread block][parity][kGemvMaxBatch][32]
  uint32_t batch;
  uint32_t member_begin[kFusedMaxGroups + 1];  // group i: members [begin[i], begin[i + 1])
  GemvMemberDesc members[kFusedMaxMembers];
};

struct FusedBatch {
  KernelBatch<kFusedMaxGroups> decode;
  GemvParams gemv;
};

struct ReduceParams {
  const float* partials;
  uint32_t batch, n_members;
  uint64_t total_rows;
  uint64_t row_begin[kFusedMaxMembers + 1];  // member m: rows [row_begin[m], row_begin[m+1])
  GemvMemberDesc members[kFusedMaxMembers];
};

__device__ __forceinline__ float bf16_to_float(uint32_t bits) {
  return __uint_as_float(bits << 16);
}

// Round to nearest even; NaN stays NaN (quiet).
__device__ __forceinline__ uint16_t float_to_bf16(float f) {
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// ---- the accumulation order (shared by both kernels) ----

// kWords 32-bit words from p (4 * kWords-byte aligned): one 4-, 8- or 16-byte load each.
template <uint32_t kWords>
__device__ __forceinline__ void ldg_words(const void* p, uint32_t (&w)[kWords]) {
  if constexpr (kWords == 1) {
    w[0] = __ldg(static_cast<const unsigned int*>(p));
  } else if constexpr (kWords == 2) {
    const uint2 v = __ldg(static_cast<const uint2*>(p));
    w[0] = v.x;
    w[1] = v.y;
  } else {
#pragma unroll
    for (uint32_t k = 0; k < kWords / 4; ++k) {
      const uint4 v = __ldg(static_cast<const uint4*>(p) + k);
      w[4 * k] = v.x;
      w[4 * k + 1] = v.y;
      w[4 * k + 2] = v.z;
      w[4 * k + 3] = v.w;
    }
  }
}

// acc[j] += w * x[q][j] for one weight, j < n (NT: the kernel's batch capacity).
template <uint32_t NT>
__device__ __forceinline__ void fma_row(float w, const uint16_t* xq, uint32_t n, bool x_vec,
                                        float (&acc)[NT]) {
  if (x_vec && n == NT && NT >= 2) {  // NT * 2 bytes at an NT * 2-aligned address
    uint32_t xw[NT / 2 > 0 ? NT / 2 : 1];
    ldg_words(xq, xw);
#pragma unroll
    for (uint32_t j = 0; j < NT; ++j) {
      const uint32_t bits = (xw[j / 2] >> (16 * (j % 2))) & 0xFFFFu;
      acc[j] = __fmaf_rn(w, bf16_to_float(bits), acc[j]);
    }
    return;
  }
#pragma unroll
  for (uint32_t j = 0; j < NT; ++j) {
    if (j < n) acc[j] = __fmaf_rn(w, bf16_to_float(__ldg(xq + j)), acc[j]);
  }
}

// acc += w * x over one 8-column unit at batch 1: w the unit's BF16 weights (as src.unit()
// gives them), x 16-byte aligned at the unit's first column.
__device__ __forceinline__ void fma_unit_batch1(const uint4& w, const uint16_t* x, float& acc) {
  const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x));
  const uint32_t ws[4] = {w.x, w.y, w.z, w.w};
  const uint32_t xs[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
  for (uint32_t e = 0; e < kUnit; ++e) {
    const uint32_t wb = (ws[e / 2] >> (16 * (e % 2))) & 0xFFFFu;
    const uint32_t xb = (xs[e / 2] >> (16 * (e % 2))) & 0xFFFFu;
    acc = __fmaf_rn(bf16_to_float(wb), bf16_to_float(xb), acc);
  }
}

// x in its own layout, [cols][n] (the reference kernel, and the fused kernel at batch 1).
struct RowMajorX {
  const uint16_t* x;  // the chunk's first column
  uint32_t n;
  bool vec;  // x 16-byte aligned
  __device__ __forceinline__ bool batch1() const { return n == 1 && vec; }
  // acc += w * x[q][0..n) for one weight at chunk row q.
  template <uint32_t NT>
  __device__ __forceinline__ void fma(float w, uint32_t q, float (&acc)[NT]) const {
    fma_row<NT>(w, x + q * n, n, vec, acc);
  }
  // The 8 weights of the unit at chunk row u0 (u0 a multiple of 8), in increasing order.
  template <uint32_t NT>
  __device__ __forceinline__ void fma_unit(const uint4& w, uint32_t u0, float (&acc)[NT]) const {
    if (NT == 1 && batch1()) {  // the unit's 8 x values in one load
      fma_unit_batch1(w, x + u0, acc[0]);
      return;
    }
    const uint32_t ws[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (uint32_t e = 0; e < kUnit; ++e) {
      const uint32_t wb = (ws[e / 2] >> (16 * (e % 2))) & 0xFFFFu;
      fma_row<NT>(bf16_to_float(wb), x + (u0 + e) * n, n, vec, acc);
    }
  }
};

// x of one chunk rearranged for the lanes (the fused kernel at batch >= 2; tile_x_kernel
// writes it): x[q][j] of chunk row q = 256 k + 8 l + e (lane l's unit k, weight e) lies at
// (((k * 8 + e) * kGroups + g) * 32 + l) * kVec + j - g * kVec, column groups g of kVec
// columns, zero past the batch and past the row. A warp's load of one (k, e, g) is then
// 32 * 16 bytes or less, contiguous, instead of 32 lines of the row-major [cols][n] layout,
// where lane l's unit sits 8 * n * 2 bytes from lane l + 1's: at batch 16 each 16-byte load
// took 32 L1 wavefronts, i.e. 2 per weight, and those were the cost of each batch column.
// The FMAs and their order are those of RowMajorX; only the loads differ. Values are BF16
// (one extraction per FMA), but FP32 at NT = 4: one 16-byte load per weight and no
// extraction measured faster there, while at 8 and 16 the doubled bytes cost more than the
// extractions save (decoder/cuda/NOTES.md).
template <uint32_t NT>
struct TiledX {
  static constexpr bool kF32 = NT == 4;
  using Elem = std::conditional_t<kF32, float, uint16_t>;
  static constexpr uint32_t kVec = kF32 ? 4 : NT < 8 ? NT : 8;  // 16 bytes at most
  static constexpr uint32_t kGroups = NT / kVec;
  static constexpr uint32_t kStepE = kGroups * 32 * kVec;  // elements from weight e to e + 1
  const Elem* xt;                                          // the chunk's tile (16-byte aligned)
  // acc[j] += w * x[j] for the NT values of one weight: groups at p, p + 32 * kVec, ...
  __device__ __forceinline__ static void fma_at(float w, const Elem* p, float (&acc)[NT]) {
#pragma unroll
    for (uint32_t g = 0; g < kGroups; ++g) {
      uint32_t xw[kVec * sizeof(Elem) / 4];
      ldg_words(p + g * 32 * kVec, xw);
      if constexpr (kF32) {
#pragma unroll
        for (uint32_t i = 0; i < kVec; ++i) {
          acc[g * kVec + i] = __fmaf_rn(w, __uint_as_float(xw[i]), acc[g * kVec + i]);
        }
      } else {
#pragma unroll
        for (uint32_t i = 0; i < kVec / 2; ++i) {
          acc[g * kVec + 2 * i] = __fmaf_rn(w, __uint_as_float(xw[i] << 16), acc[g * kVec + 2 * i]);
          acc[g * kVec + 2 * i + 1] =
              __fmaf_rn(w, __uint_as_float(xw[i] & 0xFFFF0000u), acc[g * kVec + 2 * i + 1]);
        }
      }
    }
  }
  __device__ __forceinline__ const Elem* unit_at(uint32_t u0) const {  // u0 % 8 == 0
    return xt + ((u0 / 256) * 8 * kGroups * 32 + (u0 / 8) % 32) * kVec;
  }
  __device__ __forceinline__ void fma(float w, uint32_t q, float (&acc)[NT]) const {
    fma_at(w, unit_at(q & ~(kUnit - 1)) + (q % kUnit) * kStepE, acc);
  }
  __device__ __forceinline__ void fma_unit(const uint4& w, uint32_t u0, float (&acc)[NT]) const {
    const Elem* const p = unit_at(u0);
    const uint32_t ws[4] = {w.x, w.y, w.z, w.w};
    if constexpr (kF32) {
      // The x values of four weights loaded before their FMAs (same FMAs, same order): left
      // to itself, ptxas kept two 16-byte loads in flight here once the decode body took
      // fewer registers, and the batch-4 kernel ran slower.
#pragma unroll
      for (uint32_t e0 = 0; e0 < kUnit; e0 += 4) {
        uint32_t xw[4][4];
#pragma unroll
        for (uint32_t e = 0; e < 4; ++e) ldg_words(p + (e0 + e) * kStepE, xw[e]);
#pragma unroll
        for (uint32_t e = 0; e < 4; ++e) {
          const float wf = bf16_to_float((ws[(e0 + e) / 2] >> (16 * ((e0 + e) % 2))) & 0xFFFFu);
#pragma unroll
          for (uint32_t i = 0; i < 4; ++i) {
            acc[i] = __fmaf_rn(wf, __uint_as_float(xw[e][i]), acc[i]);
          }
        }
      }
    } else {
#pragma unroll
      for (uint32_t e = 0; e < kUnit; ++e) {
        const uint32_t wb = (ws[e / 2] >> (16 * (e % 2))) & 0xFFFFu;
        fma_at(bf16_to_float(wb), p + e * kStepE, acc);
      }
    }
  }
};

// Lane `lane`'s part of one chunk: the weights at chunk-relative columns [q_lo, q_hi) of its
// 8-column units lane, lane + 32, ..., in increasing order. `src` gives weights as BF16
// bits: src.unit(q) the 8 at q..q+7 (q a multiple of 8; only when `w_vec`), src.one(q) one;
// `x` (RowMajorX or TiledX) gives the chunk's x and does the FMAs of one weight or one unit,
// each acc[j] in increasing column order.
template <uint32_t NT, class Src, class X>
__device__ __forceinline__ void accumulate_lane(const Src& src, uint32_t lane, uint32_t q_lo,
                                                uint32_t q_hi, bool w_vec, const X& x,
                                                float (&acc)[NT]) {
  if constexpr (NT == 1) {  // RowMajorX only (TiledX serves batch >= 2)
    if (x.batch1() && w_vec && q_lo == 0 && q_hi == kChunk) {
      // A whole chunk at batch 1: 4 units per lane, unrolled, no checks.
      constexpr uint32_t kUnitsPerLane = kChunk / (kUnit * 32);
#pragma unroll
      for (uint32_t k = 0; k < kUnitsPerLane; ++k) {
        const uint32_t u0 = kUnit * (lane + 32 * k);
        fma_unit_batch1(src.unit(u0), x.x + u0, acc[0]);
      }
      return;
    }
  }
#pragma unroll 1
  for (uint32_t u0 = kUnit * lane; u0 < q_hi; u0 += kUnit * 32) {
    if (u0 + kUnit <= q_lo) continue;
    if (w_vec && u0 >= q_lo && u0 + kUnit <= q_hi) {
      x.fma_unit(src.unit(u0), u0, acc);
      continue;
    }
#pragma unroll 1
    for (uint32_t q = max(u0, q_lo); q < min(u0 + kUnit, q_hi); ++q) {
      x.fma(bf16_to_float(src.one(q)), q, acc);
    }
  }
}

// The 32 lane sums of a chunk: butterfly, every lane ends with the same value.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (uint32_t d = 16; d >= 1; d /= 2) v = __fadd_rn(v, __shfl_xor_sync(kFullMask, v, d));
  return v;
}

// Lanes j < n write the chunk's sums: partials[chunk * n + j].
template <uint32_t NT>
__device__ __forceinline__ void finish_chunk(const float (&acc)[NT], uint32_t lane, uint32_t n,
                                             float* partials, uint64_t chunk) {
  float mine = 0.0f;
#pragma unroll
  for (uint32_t j = 0; j < NT; ++j) {
    const float s = warp_sum(acc[j]);
    if (lane == j) mine = s;
  }
  if (lane < n) partials[chunk * n + lane] = mine;
}

// y[r][j] = BF16(+0 + chunk 0 + chunk 1 + ...), one thread per (row, column).
__global__ void __launch_bounds__(256) reduce_kernel(const __grid_constant__ ReduceParams p) {
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= p.total_rows * p.batch) return;
  const uint64_t row = i / p.batch;
  const uint32_t j = static_cast<uint32_t>(i - row * p.batch);
  uint32_t lo = 0, hi = p.n_members;
  while (hi - lo > 1) {
    const uint32_t mid = (lo + hi) / 2;
    if (p.row_begin[mid] <= row)
      lo = mid;
    else
      hi = mid;
  }
  const GemvMemberDesc& m = p.members[lo];
  const uint64_t r = row - p.row_begin[lo];
  const float* part = p.partials + (m.chunk_base + r * m.chunks_per_row) * p.batch + j;
  float acc = 0.0f;
  for (uint32_t c = 0; c < m.chunks_per_row; ++c) acc = __fadd_rn(acc, part[c * p.batch]);
  m.y[r * p.batch + j] = float_to_bf16(acc);
}

// ---- x rearranged for the fused kernel at batch >= 2 (TiledX) ----

struct TileMember {
  const uint16_t* x;  // [cols][n]
  void* xt;           // chunks_per_row * kChunk * NT values (TiledX<NT>::Elem), 16-byte aligned
  uint32_t cols, chunks_per_row;
};

struct TileParams {
  uint32_t n;
  TileMember members[kFusedMaxMembers];
};

// One thread per element of the tiles of member blockIdx.y (TiledX gives the layout).
template <uint32_t NT>
__global__ void __launch_bounds__(256) tile_x_kernel(const __grid_constant__ TileParams p) {
  using T = TiledX<NT>;
  const TileMember& m = p.members[blockIdx.y];
  const uint64_t total = uint64_t{m.chunks_per_row} * kChunk * NT;
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total;
       i += uint64_t{gridDim.x} * blockDim.x) {
    uint64_t rest = i;
    const uint32_t jj = static_cast<uint32_t>(rest % T::kVec);
    rest /= T::kVec;
    const uint32_t lane = static_cast<uint32_t>(rest % 32);
    rest /= 32;
    const uint32_t g = static_cast<uint32_t>(rest % T::kGroups);
    rest /= T::kGroups;
    const uint32_t e = static_cast<uint32_t>(rest % kUnit);
    rest /= kUnit;
    const uint32_t k = static_cast<uint32_t>(rest % (kChunk / (kUnit * 32)));
    const uint64_t c = rest / (kChunk / (kUnit * 32));
    const uint64_t col = c * kChunk + kUnit * (32 * k + lane) + e;
    const uint32_t j = g * T::kVec + jj;
    const uint16_t v = col < m.cols && j < p.n ? m.x[col * p.n + j] : uint16_t{0};
    if constexpr (T::kF32) {
      static_cast<float*>(m.xt)[i] = bf16_to_float(v);
    } else {
      static_cast<uint16_t*>(m.xt)[i] = v;
    }
  }
}

// ---- the reference GEMV: BF16 weights from global memory, one warp per chunk ----

struct GlobalWeights {
  const uint16_t* w;  // the chunk's first weight
  __device__ __forceinline__ uint4 unit(uint32_t q) const {
    return __ldg(reinterpret_cast<const uint4*>(w + q));
  }
  __device__ __forceinline__ uint32_t one(uint32_t q) const { return __ldg(w + q); }
};

constexpr uint32_t kReferenceWarps = 8;

template <uint32_t NT>
__global__ void __launch_bounds__(32 * kReferenceWarps)
    reference_kernel(const uint16_t* w, uint32_t rows, uint32_t cols, uint32_t chunks_per_row,
                     const uint16_t* x, uint32_t n, float* partials) {
  const uint64_t chunk = uint64_t{blockIdx.x} * kReferenceWarps + threadIdx.x / 32;
  if (chunk >= uint64_t{rows} * chunks_per_row) return;
  const uint32_t lane = threadIdx.x % 32;
  const uint64_t r = chunk / chunks_per_row;
  const uint32_t c0 = static_cast<uint32_t>(chunk - r * chunks_per_row) * kChunk;
  const uint32_t len = min(kChunk, cols - c0);
  const GlobalWeights src{w + r * cols + c0};
  const uint16_t* xc = x + uint64_t{c0} * n;
  const bool w_vec = reinterpret_cast<uintptr_t>(src.w) % 16 == 0;
  const bool x_vec = reinterpret_cast<uintptr_t>(xc) % 16 == 0;
  float acc[NT];
#pragma unroll
  for (uint32_t j = 0; j < NT; ++j) acc[j] = 0.0f;
  accumulate_lane<NT>(src, lane, 0, len, w_vec, RowMajorX{xc, n, x_vec}, acc);
  finish_chunk<NT>(acc, lane, n, partials, chunk);
}

// ---- the fused kernel's sink ----

__device__ __forceinline__ uint32_t lds_u8(uint32_t a) {
  uint16_t v;
  asm volatile("ld.shared.u8 %0, [%1];" : "=h"(v) : "r"(a) : "memory");
  return v;
}

// Weights of one block as BF16 bits, chunk-relative: exponents from the staging buffer,
// sign_mantissa bytes from their shared stage or global memory.
struct StagedWeights {
  const KernelGroup* g;
  uint32_t first;  // group index of the chunk's column 0
  uint32_t ex_at;  // shared address of that weight's exponent byte (may be "negative")
  uint32_t sm_at;  // likewise in the sign_mantissa stage
  bool sm_staged;
  __device__ __forceinline__ uint4 unit(uint32_t q) const {  // ex_at + q 8-byte aligned
    const uint2 ex = lds_u64(ex_at + q);
    const uint2 sm = sm_staged ? lds_u64(sm_at + q) : load_sign_mantissa(*g, first + q);
    uint4 v;
    join4(sm.x, ex.x, v.x, v.y);
    join4(sm.y, ex.y, v.z, v.w);
    return v;
  }
  __device__ __forceinline__ uint32_t one(uint32_t q) const {
    const uint32_t sm = sm_staged ? lds_u8(sm_at + q) : __ldg(g->sign_mantissa + first + q);
    return join1(sm, lds_u8(ex_at + q));
  }
};

struct ChunkPlace {
  const GemvMemberDesc* m;
  uint64_t chunk;       // index among the plan's partials
  uint32_t start, end;  // weights [start, end) of the group
  uint32_t row, col;    // row and column of `start` in the member
};

__device__ __forceinline__ ChunkPlace place_in(const GemvMemberDesc& m, uint32_t r, uint32_t col) {
  ChunkPlace c;
  c.m = &m;
  c.chunk = m.chunk_base + uint64_t{r} * m.chunks_per_row + col / kChunk;
  c.start = m.start + r * m.cols + col;
  c.end = c.start + min(kChunk, m.cols - col);
  c.row = r;
  c.col = col;
  return c;
}

// Which chunks a block gives this thread block, found once per block by one warp
// (prepare()) and read by all in step 6 (consume()).
struct BlockChunks {
  uint64_t first, last;  // chunks first..last (none if first > last)
  ChunkPlace a;          // the chunk holding the block's first weight
};
constexpr uint32_t kPlacedChunks = 32;  // places of chunks first .. first + 31, by lane

// Shared memory of the fused kernel only (file scope, so that the sink keeps no pointers to
// it in registers: the kernel is at its 64-register cap).
__shared__ BlockChunks fused_blk;
__shared__ ChunkPlace fused_placed[kPlacedChunks];
// Warp 0's memory across blocks: the chunk holding weight `at` of group `gi` (the previous
// block's op1), i.e. the next block's first chunk, found without a lookup.
struct NextChunk {
  ChunkPlace place;
  uint32_t at, gi;
};
__shared__ NextChunk fused_next;

template <uint32_t NT>
struct GemvSink {
  // A block's staging bytes are zeroed one block later (prepare()): two buffers.
  static constexpr uint32_t kExponentBuffers = 2;

  const GemvParams& p;
  uint32_t zero_from = 0, zero_to = 0, zero_at = 0;  // previous block's staging bytes

  // Member of group gi holding weight i (members cover the group).
  __device__ __forceinline__ const GemvMemberDesc& member_of_weight(uint32_t gi, uint32_t i) const {
    uint32_t lo = p.member_begin[gi], hi = p.member_begin[gi + 1];
    while (hi - lo > 1) {
      const uint32_t mid = (lo + hi) / 2;
      if (p.members[mid].start <= i)
        lo = mid;
      else
        hi = mid;
    }
    return p.members[lo];
  }
  __device__ __forceinline__ ChunkPlace chunk_of_weight(uint32_t gi, uint32_t i) const {
    const GemvMemberDesc& m = member_of_weight(gi, i);
    const uint32_t local = i - m.start;
    const uint32_t r = local / m.cols;
    return place_in(m, r, (local - r * m.cols) / kChunk * kChunk);
  }
  __device__ __forceinline__ ChunkPlace chunk_at(uint32_t gi, uint64_t chunk) const {
    uint32_t lo = p.member_begin[gi], hi = p.member_begin[gi + 1];
    while (hi - lo > 1) {
      const uint32_t mid = (lo + hi) / 2;
      if (p.members[mid].chunk_base <= chunk)
        lo = mid;
      else
        hi = mid;
    }
    const GemvMemberDesc& m = p.members[lo];
    const uint32_t local = static_cast<uint32_t>(chunk - m.chunk_base);
    const uint32_t r = local / m.chunks_per_row;
    return place_in(m, r, (local - r * m.chunks_per_row) * kChunk);
  }
  // Chunk `chunk` >= a.chunk: a few chunks on in a's member by stepping (no division), else
  // looked up.
  __device__ __forceinline__ ChunkPlace chunk_after(uint32_t gi, const ChunkPlace& a,
                                                    uint64_t chunk) const {
    const GemvMemberDesc& m = *a.m;
    const uint64_t ahead = chunk - a.chunk;
    if (ahead > 64 || chunk >= m.chunk_base + uint64_t{m.rows} * m.chunks_per_row) {
      return chunk_at(gi, chunk);
    }
    uint32_t c = a.col / kChunk + static_cast<uint32_t>(ahead);
    uint32_t r = a.row;
    while (c >= m.chunks_per_row) {
      c -= m.chunks_per_row;
      ++r;
    }
    return place_in(m, r, c * kChunk);
  }

  // The chunk holding weight op1 started in this range and goes on into the next block.
  __device__ __forceinline__ bool needs_next_block(const BlockOut& o) const {
    if (o.op1 >= o.g->n_elements) return false;
    const ChunkPlace c = chunk_of_weight(o.gi, o.op1);
    return c.start < o.op1 && c.start >= o.own_from && c.start < o.own_to;
  }

  __device__ __forceinline__ void after_block(const BlockOut&) const {}  // fast configuration only

  // Warp 0, between the block's two barriers: the block's chunks and the places of the first
  // 32 (one lookup per block instead of one per warp), for consume() after the second.
  __device__ __forceinline__ void prepare(const BlockOut& o) {
    if (threadIdx.x >= 32) return;
    const uint32_t lane = threadIdx.x;
    uint64_t first = 1, last = 0;
    ChunkPlace a{};
    if (o.op1 > o.op0) {
      // Chunks of this block that are ours: starting in [own_from, own_to).
      a = o.gi == fused_next.gi && o.op0 == fused_next.at ? fused_next.place
                                                          : chunk_of_weight(o.gi, o.op0);
      if (o.op1 < o.g->n_elements) {
        const ChunkPlace next = chunk_of_weight(o.gi, o.op1);
        __syncwarp();  // every lane has read fused_next
        if (lane == 0) fused_next = NextChunk{next, o.op1, o.gi};
        last = next.start < o.op1 ? next.chunk : next.chunk - 1;
      } else {  // the group's last chunk ends at op1
        const GemvMemberDesc& m = p.members[p.member_begin[o.gi + 1] - 1];
        last = m.chunk_base + uint64_t{m.rows} * m.chunks_per_row - 1;
      }
      first = a.chunk + (a.start < o.own_from ? 1 : 0);
      if (o.extra) {  // only the chunk that runs on from the range
        last = a.chunk;
        if (a.start >= o.own_to) first = last + 1;
      }
      if (first + lane <= last) fused_placed[lane] = chunk_after(o.gi, a, first + lane);
    }
    if (lane == 0) fused_blk = BlockChunks{first, last, a};
    __syncwarp();
  }

  __device__ __forceinline__ void consume(const BlockOut& o) {
    const uint32_t t = threadIdx.x;
    // The previous block's exponents, back to zero (scatter_exponents ORs into zeros). Its
    // buffer is scattered into again in the next iteration, after that iteration's scan
    // barrier; nothing reads it in this one (carries hold sums, not weights).
    for (uint32_t u = zero_from + kUnit * t; u < zero_to; u += kUnit * kThreads) {
      sts_zero64(zero_at + u);
    }
    zero_from = (o.op0 - o.base) & ~(kUnit - 1);
    zero_to = o.op1 > o.op0 ? o.op1 - o.base : zero_from;
    zero_at = o.staging;

    const uint32_t lane = t % 32;
    const uint32_t warp = t / 32;
    const uint64_t first = fused_blk.first, last = fused_blk.last;
    float* const carry_out = p.carry + (uint64_t{blockIdx.x} * 2 + o.parity) * kGemvMaxBatch * 32;
    const float* const carry_in =
        p.carry + (uint64_t{blockIdx.x} * 2 + (o.parity ^ 1)) * kGemvMaxBatch * 32;
    const uint32_t n = p.batch;
    for (uint64_t k = first + warp; k <= last; k += kWarps) {
      const ChunkPlace c =
          k - first < kPlacedChunks ? fused_placed[k - first] : chunk_after(o.gi, fused_blk.a, k);
      const uint32_t lo = max(c.start, o.op0);
      const uint32_t hi = min(c.end, o.op1);
      float acc[NT];
#pragma unroll
      for (uint32_t j = 0; j < NT; ++j) {
        acc[j] = lo > c.start ? carry_in[j * 32 + lane] : 0.0f;
      }
      // Staging byte of weight i is i - base, so the chunk's column 0 is at c.start - base
      // (it may lie before this block: those columns are not read here).
      const StagedWeights src{o.g, c.start, o.staging + (c.start - o.base),
                              o.sm_stage_at + (c.start - o.base), o.sm_staged};
      const bool w_vec = (c.start - o.base) % kUnit == 0;
      if constexpr (NT == 1) {
        const uint16_t* xc = c.m->x + c.col;
        const bool x_vec = reinterpret_cast<uintptr_t>(xc) % 16 == 0;
        accumulate_lane<NT>(src, lane, lo - c.start, hi - c.start, w_vec, RowMajorX{xc, n, x_vec},
                            acc);
      } else {  // m->x is the member's tiled x (tile_x_kernel): NT values per row
        accumulate_lane<NT>(src, lane, lo - c.start, hi - c.start, w_vec,
                            TiledX<NT>{reinterpret_cast<const typename TiledX<NT>::Elem*>(c.m->x) +
                                       uint64_t{c.col} * NT},
                            acc);
      }
      if (hi < c.end) {
#pragma unroll
        for (uint32_t j = 0; j < NT; ++j) carry_out[j * 32 + lane] = acc[j];
      } else {
        finish_chunk<NT>(acc, lane, n, p.partials, c.chunk);
      }
    }
  }
};

template <uint32_t NT>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    fused_gemv_kernel(const __grid_constant__ FusedBatch batch) {
  if (threadIdx.x == 0) {  // nothing cached (before the first barrier)
    fused_next.at = 0xFFFFFFFFu;
    fused_next.gi = 0xFFFFFFFFu;
  }
  GemvSink<NT> sink{batch.gemv};
  decode_blocks<kFusedMaxGroups, false>(batch.decode, sink);
}

// ---- host side ----

template <uint32_t NT>
Status configure_fused(uint32_t shared_bytes, int& ctas_per_sm) {
  const auto kernel = fused_gemv_kernel<NT>;
  static std::mutex mutex;
  static std::map<std::pair<int, uint32_t>, int> known;  // (device, bytes) -> CTAs per SM
  int device = 0;
  DF11_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "cudaGetDevice");
  std::lock_guard<std::mutex> lock(mutex);
  const auto it = known.find({device, shared_bytes});
  if (it != known.end()) {
    ctas_per_sm = it->second;
    return Status::ok();
  }
  int optin = 0;
  DF11_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
      "cudaDeviceGetAttribute(shared memory per block)");
  cudaFuncAttributes attr{};
  DF11_CUDA_RETURN_IF_ERROR(cudaFuncGetAttributes(&attr, kernel),
                            "cudaFuncGetAttributes(fused GEMV kernel)");
  ctas_per_sm = 0;
  if (attr.sharedSizeBytes + shared_bytes <= static_cast<size_t>(optin)) {
    // Only ever raised (see occupancy_of in decode_kernel.cu): the largest wins.
    int current = attr.maxDynamicSharedSizeBytes;
    if (static_cast<int>(shared_bytes) > current) {
      DF11_CUDA_RETURN_IF_ERROR(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(shared_bytes)),
          "cudaFuncSetAttribute(fused GEMV kernel, " + std::to_string(shared_bytes) + " bytes)");
    }
    DF11_CUDA_RETURN_IF_ERROR(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas_per_sm, kernel, kThreads, shared_bytes),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor(fused GEMV kernel)");
  }
  known[{device, shared_bytes}] = ctas_per_sm;
  return Status::ok();
}

uint32_t capacity_of(uint32_t batch) {
  return batch <= 1 ? 1 : batch <= 2 ? 2 : batch <= 4 ? 4 : batch <= 8 ? 8 : 16;
}

// The fast configuration's dynamic shared memory for the plan.
uint32_t fused_shared_bytes(const DecodePlan::Impl& p) {
  return dynamic_shared_bytes(p.layout, staging_buffers<false, GemvSink<1>::kExponentBuffers>());
}

Status configure_for(const DecodePlan::Impl& p, uint32_t batch, int& ctas_per_sm) {
  const uint32_t bytes = fused_shared_bytes(p);
  switch (capacity_of(batch)) {
    case 1:
      return configure_fused<1>(bytes, ctas_per_sm);
    case 2:
      return configure_fused<2>(bytes, ctas_per_sm);
    case 4:
      return configure_fused<4>(bytes, ctas_per_sm);
    case 8:
      return configure_fused<8>(bytes, ctas_per_sm);
    default:
      return configure_fused<16>(bytes, ctas_per_sm);
  }
}

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

// Bytes per value of the tiled x at this batch (TiledX<capacity>::Elem).
uint32_t tile_value_bytes(uint32_t batch) {
  switch (capacity_of(batch)) {
    case 2:
      return sizeof(TiledX<2>::Elem);
    case 4:
      return sizeof(TiledX<4>::Elem);
    case 8:
      return sizeof(TiledX<8>::Elem);
    default:
      return sizeof(TiledX<16>::Elem);
  }
}

// What a launch needs, checked against the plan.
struct GemvLayout {
  std::vector<uint64_t> chunk_base;  // per matrix
  std::vector<uint64_t> xt_base;     // per matrix: its tiled x (batch >= 2), in bytes
  uint64_t total_chunks = 0, total_xt = 0;
  uint64_t carry_offset = 0, partials_offset = 0, xt_offset = 0, bytes = 0;
  uint32_t grid = 0;
};

Result<GemvLayout> layout_for(const DecodePlan::Impl& p, std::span<const GemvMatrix> matrices,
                              uint32_t batch, const char* what) {
  const std::string w = what;
  if (batch < 1 || batch > kGemvMaxBatch) {
    return Status(ErrorCode::kInvalidArgument,
                  w + ": batch " + std::to_string(batch) + " is not within 1..16");
  }
  size_t members = 0;
  for (const auto& ends : p.member_ends) members += ends.size();
  if (matrices.size() != members) {
    return Status(ErrorCode::kInvalidArgument, w + ": " + std::to_string(matrices.size()) +
                                                   " matrices for the plan's " +
                                                   std::to_string(members) + " members");
  }
  GemvLayout l;
  size_t mi = 0;
  for (size_t gi = 0; gi < p.member_ends.size(); ++gi) {
    if (p.member_ends[gi].size() > kFusedMaxMembers) {  // one launch takes a group whole
      return Status(ErrorCode::kResourceLimit, w + ": " + p.names[gi] + " has " +
                                                   std::to_string(p.member_ends[gi].size()) +
                                                   " members, the fused kernel takes at most " +
                                                   std::to_string(kFusedMaxMembers) + " per group");
    }
    uint64_t start = 0;
    for (size_t k = 0; k < p.member_ends[gi].size(); ++k, ++mi) {
      const GemvMatrix& m = matrices[mi];
      const uint64_t size = p.member_ends[gi][k] - start;
      const std::string mw = w + ": " + p.names[gi] + ", member " + std::to_string(k);
      if (m.rows == 0 || m.cols == 0 || uint64_t{m.rows} * m.cols != size) {
        return Status(ErrorCode::kInvalidArgument,
                      mw + ": shape " + std::to_string(m.rows) + " x " + std::to_string(m.cols) +
                          " does not hold its " + std::to_string(size) + " weights");
      }
      if (m.d_x == nullptr || m.d_y == nullptr) {
        return Status(ErrorCode::kInvalidArgument, mw + ": d_x or d_y is null");
      }
      const uint64_t chunks_per_row = (m.cols + kChunk - 1) / kChunk;
      l.chunk_base.push_back(l.total_chunks);
      l.total_chunks += uint64_t{m.rows} * chunks_per_row;
      l.xt_base.push_back(l.total_xt);
      if (batch >= 2) {
        l.total_xt += chunks_per_row * kChunk * capacity_of(batch) * tile_value_bytes(batch);
      }
      start = p.member_ends[gi][k];
    }
  }
  int ctas_per_sm = 0;
  DF11_RETURN_IF_ERROR(configure_for(p, batch, ctas_per_sm).with_context(w));
  if (ctas_per_sm == 0) {
    return Status(ErrorCode::kResourceLimit,
                  w + ": the fused kernel does not fit this GPU (it needs " +
                      std::to_string(fused_shared_bytes(p)) +
                      " bytes of shared memory per thread block, the decode kernel's fast "
                      "configuration)");
  }
  l.grid = static_cast<uint32_t>(ctas_per_sm) * p.sm_count;
  // After the status records and the decode's pool counters (DecodePlan::workspace_bytes):
  // a workspace may alternate decodes and fused launches.
  l.carry_offset = round_up(decode_workspace_bytes(p.groups.size()), 256);
  l.partials_offset =
      round_up(l.carry_offset + uint64_t{l.grid} * 2 * kGemvMaxBatch * 32 * sizeof(float), 256);
  l.bytes = l.partials_offset + l.total_chunks * batch * sizeof(float);
  if (l.total_xt != 0) {  // + 16: the tiles start at the first 16-byte aligned address
    l.xt_offset = round_up(l.bytes, 256);
    l.bytes = l.xt_offset + 16 + l.total_xt;
  }
  return l;
}

template <uint32_t NT>
Status launch_fused(const FusedBatch& batch, uint32_t grid, uint32_t shared_bytes,
                    cudaStream_t stream) {
  fused_gemv_kernel<NT><<<grid, kThreads, shared_bytes, stream>>>(batch);
  DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "fused GEMV kernel launch");
  return Status::ok();
}

Status launch_tile_x(const TileParams& t, uint32_t n_members, uint32_t batch, cudaStream_t stream) {
  uint64_t most = 0;
  for (uint32_t i = 0; i < n_members; ++i) {
    most = std::max<uint64_t>(most, uint64_t{t.members[i].chunks_per_row} * kChunk);
  }
  const uint32_t cap = capacity_of(batch);
  const dim3 grid(static_cast<uint32_t>(std::min<uint64_t>((most * cap + 255) / 256, 4096)),
                  n_members);
  switch (cap) {
    case 2:
      tile_x_kernel<2><<<grid, 256, 0, stream>>>(t);
      break;
    case 4:
      tile_x_kernel<4><<<grid, 256, 0, stream>>>(t);
      break;
    case 8:
      tile_x_kernel<8><<<grid, 256, 0, stream>>>(t);
      break;
    default:
      tile_x_kernel<16><<<grid, 256, 0, stream>>>(t);
      break;
  }
  DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "GEMV x tiling kernel launch");
  return Status::ok();
}

Status launch_reduce(const ReduceParams& r, cudaStream_t stream) {
  const uint64_t threads = r.total_rows * r.batch;
  if (threads == 0) return Status::ok();
  const uint64_t blocks = (threads + 255) / 256;
  if (blocks > INT32_MAX) {
    return Status(ErrorCode::kResourceLimit, "GEMV reduction: too many rows in one launch");
  }
  reduce_kernel<<<static_cast<uint32_t>(blocks), 256, 0, stream>>>(r);
  DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "GEMV reduction kernel launch");
  return Status::ok();
}

// One fused launch and its reduction for groups [g0, g1) and their matrices from m0.
Status launch_part(const DecodePlan::Impl& p, uint32_t epoch, const GemvLayout& l,
                   std::span<const GemvMatrix> matrices, uint32_t batch, uint8_t* ws, size_t g0,
                   size_t g1, size_t m0, cudaStream_t stream) {
  auto fb = std::make_unique<FusedBatch>();  // ~17 KiB: not on the stack
  auto rp = std::make_unique<ReduceParams>();
  auto tp = std::make_unique<TileParams>();
  tp->n = batch;
  // Tiled x (batch >= 2) from the first 16-byte aligned address at xt_offset.
  uint8_t* const xt =
      reinterpret_cast<uint8_t*>(round_up(reinterpret_cast<uintptr_t>(ws + l.xt_offset), 16));
  KernelBatch<kFusedMaxGroups>& kb = fb->decode;
  kb.status = reinterpret_cast<GroupStatusRecord*>(ws) + g0;
  kb.n_groups = static_cast<uint32_t>(g1 - g0);
  kb.layout = p.layout;
  kb.epoch = epoch;
  GemvParams& gp = fb->gemv;
  gp.partials = reinterpret_cast<float*>(ws + l.partials_offset);
  gp.carry = reinterpret_cast<float*>(ws + l.carry_offset);
  gp.batch = batch;
  rp->partials = gp.partials;
  rp->batch = batch;
  uint64_t blocks = 0;
  uint32_t mi = 0;
  size_t at = m0;
  for (size_t gi = g0; gi < g1; ++gi) {
    KernelGroup k = p.groups[gi];
    k.first_block = static_cast<uint32_t>(blocks);
    blocks += k.n_blocks;
    kb.groups[gi - g0] = k;
    gp.member_begin[gi - g0] = mi;
    uint64_t start = 0;
    for (size_t e = 0; e < p.member_ends[gi].size(); ++e, ++mi, ++at) {
      const GemvMatrix& m = matrices[at];
      GemvMemberDesc& d = gp.members[mi];
      d.x = m.d_x;
      d.y = m.d_y;
      d.chunk_base = l.chunk_base[at];
      d.start = static_cast<uint32_t>(start);
      d.rows = m.rows;
      d.cols = m.cols;
      d.chunks_per_row = (m.cols + kChunk - 1) / kChunk;
      if (batch >= 2) {  // the fused kernel reads the tiles, written from x just before
        tp->members[mi] = TileMember{m.d_x, xt + l.xt_base[at], m.cols, d.chunks_per_row};
        d.x = reinterpret_cast<const uint16_t*>(xt + l.xt_base[at]);
      }
      rp->members[mi] = d;
      rp->row_begin[mi] = rp->total_rows;
      rp->total_rows += m.rows;
      start = p.member_ends[gi][e];
    }
  }
  gp.member_begin[g1 - g0] = mi;
  rp->n_members = mi;
  rp->row_begin[mi] = rp->total_rows;
  if (blocks > UINT32_MAX) {
    return Status(ErrorCode::kResourceLimit, "launch_decode_gemv: too many blocks in one launch");
  }
  kb.total_blocks = static_cast<uint32_t>(blocks);
  const uint32_t grid = static_cast<uint32_t>(std::min<uint64_t>(blocks, l.grid));
  if (grid == 0) return Status::ok();
  const uint32_t shared = fused_shared_bytes(p);
  const uint32_t cap = capacity_of(batch);
  const auto launch = cap == 1   ? launch_fused<1>
                      : cap == 2 ? launch_fused<2>
                      : cap == 4 ? launch_fused<4>
                      : cap == 8 ? launch_fused<8>
                                 : launch_fused<16>;
  if (batch >= 2) DF11_RETURN_IF_ERROR(launch_tile_x(*tp, mi, batch, stream));
  DF11_RETURN_IF_ERROR(launch(*fb, grid, shared, stream));
  return launch_reduce(*rp, stream);
}

}  // namespace
}  // namespace detail

Result<size_t> gemv_workspace_bytes(const DecodePlan& plan, std::span<const GemvMatrix> matrices,
                                    uint32_t batch) {
  DF11_ASSIGN_OR_RETURN(
      const detail::GemvLayout l,
      detail::layout_for(detail::PlanAccess::impl(plan), matrices, batch, "gemv_workspace_bytes"));
  return static_cast<size_t>(l.bytes);
}

Status launch_decode_gemv(DecodePlan& plan, std::span<const GemvMatrix> matrices, uint32_t batch,
                          void* d_workspace, size_t workspace_bytes, CUstream_st* stream) {
  DecodePlan::Impl& p = detail::PlanAccess::impl(plan);
  DF11_ASSIGN_OR_RETURN(const detail::GemvLayout l,
                        detail::layout_for(p, matrices, batch, "launch_decode_gemv"));
  if (workspace_bytes < l.bytes || d_workspace == nullptr) {
    return Status(ErrorCode::kInvalidArgument,
                  "launch_decode_gemv: workspace of " + std::to_string(workspace_bytes) +
                      " bytes, the launch needs " + std::to_string(l.bytes));
  }
  int device = -1;
  DF11_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "launch_decode_gemv: cudaGetDevice");
  if (device != p.device) {
    return Status(ErrorCode::kInvalidArgument,
                  "launch_decode_gemv: the plan was made for device " + std::to_string(p.device) +
                      ", the current device is " + std::to_string(device));
  }
  if (p.groups.empty()) return Status::ok();
  // As launch_decode(): the epoch of this workspace's launch (workspace_ledger.h).
  DF11_ASSIGN_OR_RETURN(const uint32_t epoch,
                        detail::begin_launch(p, d_workspace, stream, "launch_decode_gemv"));
  auto* ws = static_cast<uint8_t*>(d_workspace);
  size_t g0 = 0, m0 = 0;
  while (g0 < p.groups.size()) {
    size_t g1 = g0, members = 0;
    while (g1 < p.groups.size() && g1 - g0 < detail::kFusedMaxGroups &&
           members + p.member_ends[g1].size() <= detail::kFusedMaxMembers) {
      members += p.member_ends[g1].size();
      ++g1;
    }
    DF11_RETURN_IF_ERROR(detail::launch_part(p, epoch, l, matrices, batch, ws, g0, g1, m0, stream));
    m0 += members;
    g0 = g1;
  }
  return Status::ok();
}

size_t reference_gemv_workspace_bytes(uint32_t rows, uint32_t cols, uint32_t batch) {
  return uint64_t{rows} * ((cols + detail::kChunk - 1) / detail::kChunk) * batch * sizeof(float);
}

Status launch_reference_gemv(const uint16_t* d_w, const GemvMatrix& m, uint32_t batch,
                             void* d_workspace, size_t workspace_bytes, CUstream_st* stream) {
  using namespace detail;
  if (batch < 1 || batch > kGemvMaxBatch || m.rows == 0 || m.cols == 0 || d_w == nullptr ||
      m.d_x == nullptr || m.d_y == nullptr || d_workspace == nullptr ||
      workspace_bytes < reference_gemv_workspace_bytes(m.rows, m.cols, batch)) {
    return Status(ErrorCode::kInvalidArgument,
                  "launch_reference_gemv: need rows, cols >= 1, batch 1..16, non-null pointers "
                  "and a workspace of reference_gemv_workspace_bytes()");
  }
  const uint32_t cpr = (m.cols + kChunk - 1) / kChunk;
  const uint64_t chunks = uint64_t{m.rows} * cpr;
  const uint64_t blocks = (chunks + kReferenceWarps - 1) / kReferenceWarps;
  if (blocks > INT32_MAX) {
    return Status(ErrorCode::kResourceLimit, "launch_reference_gemv: matrix too large");
  }
  auto* partials = static_cast<float*>(d_workspace);
  const uint32_t grid = static_cast<uint32_t>(blocks);
  const uint32_t threads = 32 * kReferenceWarps;
  const auto kernel = capacity_of(batch) == 1   ? reference_kernel<1>
                      : capacity_of(batch) == 2 ? reference_kernel<2>
                      : capacity_of(batch) == 4 ? reference_kernel<4>
                      : capacity_of(batch) == 8 ? reference_kernel<8>
                                                : reference_kernel<16>;
  kernel<<<grid, threads, 0, stream>>>(d_w, m.rows, m.cols, cpr, m.d_x, batch, partials);
  DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "reference GEMV kernel launch");
  auto rp = std::make_unique<ReduceParams>();
  rp->partials = partials;
  rp->batch = batch;
  rp->n_members = 1;
  rp->total_rows = m.rows;
  rp->row_begin[0] = 0;
  rp->row_begin[1] = m.rows;
  rp->members[0] = GemvMemberDesc{m.d_x, m.d_y, 0, 0, m.rows, m.cols, cpr};
  return launch_reduce(*rp, stream);
}

}  // namespace df11::cuda
