// The compact execution layout's decode to BF16 (spec/EXEC_COMPACT.md), one lane of one tile
// at a time, written once for two compilers: the kernel (compact_kernel.cu, nvcc) and the host
// emulation (compact_emulation.cpp) include this file, so that tests without a GPU run exactly
// the arithmetic the GPU runs. A warp decodes a tile: lane L finds its bit run from the tile's
// first bit, the lane table and an exclusive prefix sum of the deltas (a warp shuffle scan on
// the GPU, a loop on the host), then decodes its 16 slots of each step through the code's
// 4,096-entry table. Every read is clamped to the blob: a corrupt blob gives wrong weights and
// an error flag, never a read outside it.
#pragma once

#include <cstdint>

#include "decode_core.h"  // DF11_HD, load_u8, load_u32
#include "df11/exec_compact.h"

namespace df11::cuda::detail {

// What the kernel needs of one blob (the host fills it from the header it wrote or validated).
struct CompactView {
  const uint8_t* blob;    // device memory: the whole blob (total_bytes)
  const uint16_t* table;  // the code's table (CompactCode::table), 4,096 entries
  uint16_t* out;          // rows x cols BF16, row-major
  uint64_t stream_words;  // u32 words of the stream part (its bytes / 4)
  uint64_t tile_bits;     // offsets of the parts (CompactGeometry)
  uint64_t lane_tables;
  uint64_t byte_plane;
  uint64_t stream;
  uint64_t steps;  // per strip
  uint64_t tiles_per_strip;
  uint64_t tiles;
  uint32_t rows, cols;
};

// The view of a blob whose header `h` (geometry `g`) the host has read.
inline CompactView compact_view(const CompactGeometry& g, const CompactHeader& h,
                                const uint8_t* blob, const uint16_t* table, uint16_t* out) {
  CompactView v{};
  v.blob = blob;
  v.table = table;
  v.out = out;
  v.stream_words = CompactGeometry::stream_bytes(h.stream_bits) / 4;
  v.tile_bits = g.tile_bits;
  v.lane_tables = g.lane_tables;
  v.byte_plane = g.byte_plane;
  v.stream = g.stream;
  v.steps = g.exec.steps;
  v.tiles_per_strip = g.exec.tiles_per_strip;
  v.tiles = g.exec.tiles;
  v.rows = h.rows;
  v.cols = h.cols;
  return v;
}

// Little-endian u64 from a byte pointer that may not be 8-aligned (the tile offsets are).
DF11_HD uint64_t compact_load_u64(const uint8_t* p) {
  return uint64_t{load_u32(p)} | uint64_t{load_u32(p + 4)} << 32;
}

// 16 bytes from a 16-byte aligned address, as four little-endian words.
DF11_HD void compact_load_16(const uint8_t* p, uint32_t (&out)[4]) {
#if defined(__CUDA_ARCH__)
  const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
  out[0] = v.x;
  out[1] = v.y;
  out[2] = v.z;
  out[3] = v.w;
#else
  for (uint32_t k = 0; k < 4; ++k) out[k] = load_le32(p + 4 * k);
#endif
}

// Eight BF16 weights (four words, low half first) to a 16-byte aligned address.
DF11_HD void compact_store_16(uint16_t* p, const uint32_t (&w)[4]) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
#else
  for (uint32_t k = 0; k < 8; ++k) p[k] = static_cast<uint16_t>(w[k / 2] >> (16 * (k % 2)));
#endif
}

// A lane's bits from `pos` on: a 64-bit buffer refilled 32 bits at a time from the stream's
// u32 words, reads past the stream part giving zeros.
struct CompactBits {
  uint64_t buf;
  uint32_t nbits;
  uint64_t next;  // the next u32 word to load
};

DF11_HD uint32_t compact_word(const CompactView& v, uint64_t k) {
  return k < v.stream_words ? load_u32(v.blob + v.stream + 4 * k) : 0;
}

DF11_HD CompactBits compact_bits_at(const CompactView& v, uint64_t pos) {
  CompactBits b;
  const uint32_t skip = static_cast<uint32_t>(pos % 32);
  b.buf = compact_word(v, pos / 32) >> skip;
  b.nbits = 32 - skip;
  b.next = pos / 32 + 1;
  return b;
}

// One codeword: its exponent; its length is added to *used, and *bad is set where the bits
// are no codeword (which then count as one bit).
DF11_HD uint32_t compact_next(const CompactView& v, CompactBits& b, uint64_t* used, bool* bad) {
  if (b.nbits < kCompactMaxCodeBits) {
    b.buf |= uint64_t{compact_word(v, b.next++)} << b.nbits;
    b.nbits += 32;
  }
  const uint32_t entry = v.table[b.buf & ((1u << kCompactMaxCodeBits) - 1)];
  const uint32_t len = entry == 0 ? 1 : entry >> 8;
  *bad |= entry == 0;
  *used += len;
  b.buf >>= len;
  b.nbits -= len;
  return entry & 0xFF;
}

// Tile t's lane table: lane_base and lane L's delta.
DF11_HD uint32_t compact_lane_base(const CompactView& v, uint64_t t) {
  const uint8_t* lt = v.blob + v.lane_tables + kCompactLaneTableBytes * t;
  return load_u8(lt) | uint32_t{load_u8(lt + 1)} << 8;
}
DF11_HD uint32_t compact_lane_delta(const CompactView& v, uint64_t t, uint32_t lane) {
  return load_u8(v.blob + v.lane_tables + kCompactLaneTableBytes * t + 2 + lane);
}

// Decodes lane `lane` of tile t, whose bits start `before` bits after the tile's first lane
// (lane x lane_base + the deltas of the lanes before it), into v.out. Returns false where its
// bits held no codeword or its codewords ran past its bits.
DF11_HD bool compact_decode_lane(const CompactView& v, uint64_t t, uint32_t lane, uint64_t before) {
  const uint64_t start = compact_load_u64(v.blob + v.tile_bits + 8 * t) + before;
  const uint64_t length = compact_lane_base(v, t) + uint64_t{compact_lane_delta(v, t, lane)};
  CompactBits bits = compact_bits_at(v, start);
  uint64_t used = 0;
  bool bad = false;
  const uint64_t strip = t / v.tiles_per_strip;
  const uint64_t first = (t % v.tiles_per_strip) * kExecTileSteps;
  const uint64_t end = first + kExecTileSteps < v.steps ? first + kExecTileSteps : v.steps;
  // Whole rows of 8 weights go out as one 16-byte store where the output allows it.
  const bool wide = v.cols % 8 == 0 && reinterpret_cast<uintptr_t>(v.out) % 16 == 0;
  for (uint64_t q = first; q < end; ++q) {
    uint32_t bytes[kExecSlots / 4];  // the lane's 16 byte-plane bytes (one 16-byte load)
    compact_load_16(
        v.blob + v.byte_plane + ((strip * v.steps + q) * kExecLanes + lane) * kExecSlots, bytes);
    uint32_t e[kExecSlots];
    for (uint32_t j = 0; j < kExecSlots; ++j) e[j] = compact_next(v, bits, &used, &bad);
    // Rows 16 strip + lane / 4 (slots 0..7) and + 8 (slots 8..15), columns 32 q + 8 (lane % 4)
    // onward (spec ); pair k's word rebuilt as spec says.
    const uint64_t col0 = q * kExecStepCols + 8 * (lane % 4);
    for (uint32_t half = 0; half < 2; ++half) {
      const uint64_t r = strip * kExecStripRows + lane / 4 + 8 * half;
      uint32_t w[4];  // the row's 8 weights, two per word (low half first)
      for (uint32_t k = 0; k < 4; ++k) {
        const uint32_t j = 8 * half + 2 * k;
        const uint32_t two = (bytes[j / 4] >> (8 * (j % 4))) & 0xFFFF;  // bytes j and j + 1
        const uint32_t p = (two & 0xFF) | e[j] << 8 | (two >> 8) << 16 | e[j + 1] << 24;
        w[k] = p >> 1 | p << 31;
      }
      if (r >= v.rows) continue;
      uint16_t* row = v.out + r * v.cols;
      if (wide && col0 + 8 <= v.cols) {
        compact_store_16(row + col0, w);
        continue;
      }
      for (uint32_t k = 0; k < 8 && col0 + k < v.cols; ++k) {
        row[col0 + k] = static_cast<uint16_t>(w[k / 2] >> (16 * (k % 2)));
      }
    }
  }
  return !bad && used <= length;
}

}  // namespace df11::cuda::detail
