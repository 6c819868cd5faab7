// Device helpers of the execution-layout kernels (spec/EXEC_LAYOUT.md 2.3-2.5): one lane's
// part of one step, turned into the A fragments of two m16n8k16 tensor-core products, from a
// blob or from BF16 weights; exceptions resolved before any product; the status record.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "df11/exec_layout.h"

namespace df11::cuda::detail {

constexpr uint32_t kExecFullMask = 0xFFFFFFFFu;
constexpr uint32_t kExecWarps = 8;  // per thread block, in every exec kernel
constexpr uint32_t kExecThreads = 32 * kExecWarps;

// Status record of a launch (16 bytes at the workspace's start; memset to FF.. / 0 first):
// the smallest (matrix << 40 | tile) that found a problem, and the kinds found.
struct ExecStatusRecord {
  unsigned long long first;  // ~0 when nothing was found
  uint32_t kinds;
  uint32_t unused;
};
enum ExecStatusKind : uint32_t {
  kExecBadTileOffsets = 1,  // a tile's offsets decrease or pass n_exceptions
  kExecBadTileCount = 2,    // a tile's code-15 weights differ from its exceptions
  kExecBadBase = 4,         // base above Max_Base
};

__device__ __forceinline__ void exec_report(ExecStatusRecord* st, uint32_t matrix, uint64_t tile,
                                            uint32_t kind) {
  atomicMin(&st->first, static_cast<unsigned long long>(uint64_t{matrix} << 40 | tile));
  atomicOr(&st->kinds, kind);
}

// Index i of the last begin[i] <= item among begin[0 .. n) (begin ascending, begin[0] == 0):
// which matrix of a launch a block or warp works on.
__device__ __forceinline__ uint32_t exec_find_item(const uint32_t* begin, uint32_t n,
                                                   uint32_t item) {
  uint32_t lo = 0, hi = n;
  while (hi - lo > 1) {
    const uint32_t mid = (lo + hi) / 2;
    if (begin[mid] <= item) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Tile `tile` of a matrix: its strip and its steps [q0, q1) (spec 2.2).
struct ExecTileItem {
  uint64_t tile, strip;
  uint32_t q0, q1;
};
__device__ __forceinline__ ExecTileItem exec_tile_item(uint64_t tile, uint32_t tiles_per_strip,
                                                       uint32_t steps) {
  const uint32_t q0 = static_cast<uint32_t>(tile % tiles_per_strip) * kExecTileSteps;
  return ExecTileItem{tile, tile / tiles_per_strip, q0, min(q0 + kExecTileSteps, steps)};
}

// A lane's 16 weights of one step as 8 pair words, BF16 pairs (low half = even slot):
// pg[k] = slots 2k, 2k+1 (row g), pg8[k] = slots 8 + 2k, 9 + 2k (row g + 8).
struct LaneWeights {
  uint32_t pg[4], pg8[4];
};

// The blob's parts of one lane of one step.
struct LaneCodes {
  uint4 bytes;  // byte plane: slots 0..15
  uint2 codes;  // code plane: 8 bytes (spec 2.3 nibble order)
};

// Exponent bytes of four consecutive slots from four codes in four bytes (spec 2.5).
__device__ __forceinline__ uint32_t exec_exponents(uint32_t codes4, uint32_t base4) {
  return codes4 + base4;  // codes <= 15 and base <= 240: no byte carries
}

// Rebuilds two weights from two byte-plane bytes and two exponents (spec 2.4): one byte
// permute and one rotate.
__device__ __forceinline__ uint32_t exec_pair(uint32_t bytes4, uint32_t exps4, uint32_t sel) {
  const uint32_t p = __byte_perm(bytes4, exps4, sel);
  return __funnelshift_r(p, p, 1);
}

// Codes of slots 0..3, 4..7, 8..11, 12..15, one per byte.
struct LaneCodeBytes {
  uint32_t c[4];
};
__device__ __forceinline__ LaneCodeBytes exec_split_codes(uint2 codes) {
  LaneCodeBytes r;
  r.c[0] = codes.x & 0x0F0F0F0Fu;
  r.c[1] = (codes.x >> 4) & 0x0F0F0F0Fu;
  r.c[2] = codes.y & 0x0F0F0F0Fu;
  r.c[3] = (codes.y >> 4) & 0x0F0F0F0Fu;
  return r;
}

// Nonzero iff some slot has code 15.
__device__ __forceinline__ uint32_t exec_exception_flags(const LaneCodeBytes& k) {
  return ((k.c[0] + 0x01010101u) | (k.c[1] + 0x01010101u) | (k.c[2] + 0x01010101u) |
          (k.c[3] + 0x01010101u)) &
         0x10101010u;
}

// Bit j set iff slot j has code 15. Per word, the flags sit at bits 4, 12, 20, 28; one
// multiply gathers them into bits 21..24 (the cross products land elsewhere, without carries).
__device__ __forceinline__ uint32_t exec_exception_mask(const LaneCodeBytes& k) {
  uint32_t m = 0;
#pragma unroll
  for (uint32_t w = 0; w < 4; ++w) {
    const uint32_t f = ((k.c[w] + 0x01010101u) & 0x10101010u) >> 4;
    m |= ((f * 0x00204081u) >> 21 & 0xFu) << (4 * w);
  }
  return m;
}

// The lane's weights from its exponent bytes (e[w]: slots 4w..4w+3) and byte plane.
__device__ __forceinline__ LaneWeights exec_build(const uint4& bytes, const uint32_t (&e)[4]) {
  LaneWeights lw;
  lw.pg[0] = exec_pair(bytes.x, e[0], 0x5140);
  lw.pg[1] = exec_pair(bytes.x, e[0], 0x7362);
  lw.pg[2] = exec_pair(bytes.y, e[1], 0x5140);
  lw.pg[3] = exec_pair(bytes.y, e[1], 0x7362);
  lw.pg8[0] = exec_pair(bytes.z, e[2], 0x5140);
  lw.pg8[1] = exec_pair(bytes.z, e[2], 0x7362);
  lw.pg8[2] = exec_pair(bytes.w, e[3], 0x5140);
  lw.pg8[3] = exec_pair(bytes.w, e[3], 0x7362);
  return lw;
}

// Exceptions of one step for the whole warp (all lanes call it, uniformly, when any lane has a
// code 15): each lane replaces the exponent bytes of its code-15 slots by the next exceptions
// in storage order (lane order, then slot order), read from exc[cursor ..) and never at or
// past `end` (a corrupt blob: those read as 0 and `overrun` is set). Returns the warp's count.
// `win` may hold exc[win_at .. win_at + win_n) read ahead (byte i in bits 8i..8i+7, win_n <=
// 4, win_at <= cursor, where win_at + i < end): those exceptions are taken from it instead of
// memory. A lane visits only its code-15 slots; where no lane has more than one (nearly every
// step), the lanes' offsets come from one ballot instead of a scan.
template <typename Cursor = uint64_t>
__device__ __forceinline__ uint32_t exec_patch_exceptions(const LaneCodeBytes& k, uint32_t (&e)[4],
                                                          const uint8_t* exc, Cursor cursor,
                                                          Cursor end, uint32_t lane, bool& overrun,
                                                          Cursor win_at = 0, uint32_t win = 0,
                                                          uint32_t win_n = 0) {
  const uint32_t mask = exec_exception_mask(k);
  const uint32_t mine = __popc(mask);
  const uint32_t some = __ballot_sync(kExecFullMask, mine != 0);
  uint32_t first, total;  // this lane's first exception, relative to cursor; the warp's count
  if (__ballot_sync(kExecFullMask, mine > 1) == 0) {
    first = __popc(some & ((1u << lane) - 1u));
    total = __popc(some);
  } else {
    uint32_t before = mine;  // inclusive scan over lanes
#pragma unroll
    for (uint32_t d = 1; d < 32; d *= 2) {
      const uint32_t v = __shfl_up_sync(kExecFullMask, before, d);
      if (lane >= d) before += v;
    }
    total = __shfl_sync(kExecFullMask, before, 31);
    first = before - mine;
  }
  if (mask != 0) {
    // Exceptions left in the list, and those the window holds, from cursor on.
    const uint32_t avail =
        cursor < end ? static_cast<uint32_t>(min(uint64_t{end - cursor}, uint64_t{0xFFFFFFFFu}))
                     : 0u;
    const Cursor skip = cursor - win_at;
    const uint32_t in_win = skip < win_n ? win_n - static_cast<uint32_t>(skip) : 0u;
    const uint32_t win_bytes = skip < win_n ? win >> (8 * static_cast<uint32_t>(skip)) : 0u;
    uint32_t left = mask, rel = first;
    do {
      const uint32_t j = __ffs(left) - 1;
      left &= left - 1;
      uint32_t v = 0;
      if (rel < avail) {
        v = rel < in_win ? win_bytes >> (8 * rel) & 0xFFu : uint32_t{__ldg(exc + cursor + rel)};
      } else {
        overrun = true;
      }
      ++rel;
      // A masked update of every word, not `if (j / 4 == w) e[w] = ...`: the compiler made that
      // a store to e[j / 4] on the stack, and so stored all four words on every step
      // (EXEC_KERNEL.md v13).
      const uint32_t shift = 8 * (j % 4), byte = 0xFFu << shift;
#pragma unroll
      for (uint32_t w = 0; w < 4; ++w) {
        const uint32_t hit = 0u - static_cast<uint32_t>(j / 4 == w);
        e[w] ^= (e[w] ^ v << shift) & byte & hit;
      }
    } while (left != 0);
  }
  return total;
}

// ---- BF16 weights (the reference): the same fragments from row-major W ----

// Pair word of W[r][c], W[r][c + 1] (zero past rows or cols).
__device__ __forceinline__ uint32_t bf16_pair(const uint16_t* w, uint32_t rows, uint32_t cols,
                                              uint64_t r, uint64_t c) {
  if (r >= rows) return 0;
  const uint16_t* row = w + r * cols;
  const uint32_t lo = c < cols ? __ldg(row + c) : 0u;
  const uint32_t hi = c + 1 < cols ? __ldg(row + c + 1) : 0u;
  return lo | hi << 16;
}

// The 8 weights of row r at columns c..c+7 as 4 pair words.
__device__ __forceinline__ void bf16_row8(const uint16_t* w, uint32_t rows, uint32_t cols,
                                          uint64_t r, uint64_t c, bool vec, uint32_t (&out)[4]) {
  if (vec && r < rows && c + 8 <= cols) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(w + r * cols + c));
    out[0] = v.x;
    out[1] = v.y;
    out[2] = v.z;
    out[3] = v.w;
    return;
  }
#pragma unroll
  for (uint32_t k = 0; k < 4; ++k) out[k] = bf16_pair(w, rows, cols, r, c + 2 * k);
}

// Zeroes the weights of a lane whose columns reach past `cols` (the ragged last step): spec
// 2.3 takes padding weights as +0, and so must the products.
__device__ __forceinline__ void mask_columns(LaneWeights& lw, uint64_t c0, uint32_t cols) {
#pragma unroll
  for (uint32_t k = 0; k < 4; ++k) {
    const uint32_t keep =
        (c0 + 2 * k < cols ? 0x0000FFFFu : 0u) | (c0 + 2 * k + 1 < cols ? 0xFFFF0000u : 0u);
    lw.pg[k] &= keep;
    lw.pg8[k] &= keep;
  }
}

// This lane's 8 x values of row j of X at columns c..c+7 (zero past cols).
__device__ __forceinline__ uint4 exec_load_x(const uint16_t* xrow, uint64_t c, uint32_t cols,
                                             bool vec) {
  if (vec && c + 8 <= cols) return __ldg(reinterpret_cast<const uint4*>(xrow + c));
  uint32_t w[4];
#pragma unroll
  for (uint32_t k = 0; k < 4; ++k) {
    const uint32_t lo = c + 2 * k < cols ? __ldg(xrow + c + 2 * k) : 0u;
    const uint32_t hi = c + 2 * k + 1 < cols ? __ldg(xrow + c + 2 * k + 1) : 0u;
    w[k] = lo | hi << 16;
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// ---- the products ----

// d += A B for one m16n8k16 BF16 product with FP32 accumulators.
__device__ __forceinline__ void mma_bf16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// One step's two products for one n8 tile: the first takes columns 8t..8t+3 of the lane
// (pairs 0, 1), the second 8t+4..8t+7 (pairs 2, 3); x holds this lane's 8 x values of its
// column of the n8 tile (spec 6: the order every kernel shares).
__device__ __forceinline__ void n8_products(const LaneWeights& lw, const uint4& x,
                                            float (&acc)[4]) {
  mma_bf16(acc, lw.pg[0], lw.pg8[0], lw.pg[1], lw.pg8[1], x.x, x.y);
  mma_bf16(acc, lw.pg[2], lw.pg8[2], lw.pg[3], lw.pg8[3], x.z, x.w);
}

// The same for each n8 tile n, x[n] its lane's x values.
template <uint32_t NB>
__device__ __forceinline__ void step_products(const LaneWeights& lw, const uint4 (&x)[NB],
                                              float (&acc)[NB][4]) {
#pragma unroll
  for (uint32_t n = 0; n < NB; ++n) n8_products(lw, x[n], acc[n]);
}

// The end of a strip's GEMM: each warp's sums (acc) meet in `red` (shared memory, [W][32][NB *
// 4]) and warp 0 adds them in warp order (spec 6) and writes Y [batch, rows] as BF16, row j at
// y + j * ld_y. Every thread of the block calls it, after any other use of `red`.
template <uint32_t NB, uint32_t W>
__device__ __forceinline__ void exec_strip_sums(float (*red)[32][NB * 4], const float (&acc)[NB][4],
                                                uint64_t strip, uint32_t rows, uint32_t batch,
                                                uint16_t* y, uint32_t ld_y) {
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t g = lane / 4, t = lane % 4;
#pragma unroll
  for (uint32_t n = 0; n < NB; ++n) {
#pragma unroll
    for (uint32_t k = 0; k < 4; ++k) red[warp][lane][4 * n + k] = acc[n][k];
  }
  __syncthreads();
  if (warp != 0) return;
#pragma unroll
  for (uint32_t n = 0; n < NB; ++n) {
#pragma unroll
    for (uint32_t k = 0; k < 4; ++k) {
      float v = red[0][lane][4 * n + k];
#pragma unroll
      for (uint32_t w = 1; w < W; ++w) v = __fadd_rn(v, red[w][lane][4 * n + k]);
      const uint64_t r = strip * kExecStripRows + g + 8 * (k / 2);
      const uint32_t j = 8 * n + 2 * t + k % 2;
      if (r < rows && j < batch) {
        const __nv_bfloat16 b = __float2bfloat16_rn(v);
        y[uint64_t{j} * ld_y + r] = *reinterpret_cast<const uint16_t*>(&b);
      }
    }
  }
}

}  // namespace df11::cuda::detail
