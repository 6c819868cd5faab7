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
  for (uint64_t q = first; q < end; ++q) {
    const uint8_t* bytes =
        v.blob + v.byte_plane + ((strip * v.steps + q) * kExecLanes + lane) * kExecSlots;
    uint32_t e[kExecSlots];
    for (uint32_t j = 0; j < kExecSlots; ++j) e[j] = compact_next(v, bits, &used, &bad);
    // Rows 16 strip + lane / 4 (slots 0..7) and + 8 (slots 8..15), columns 32 q + 8 (lane % 4)
    // onward (spec ).
    const uint64_t row0 = strip * kExecStripRows + lane / 4;
    const uint64_t col0 = q * kExecStepCols + 8 * (lane % 4);
    for (uint32_t k = 0; k < kExecSlots / 2; ++k) {
      const uint32_t j = 2 * k;
      const uint32_t p = uint32_t{load_u8(bytes + j)} | e[j] << 8 |
                         uint32_t{load_u8(bytes + j + 1)} << 16 | e[j + 1] << 24;
      const uint32_t w = p >> 1 | p << 31;
      const uint64_t r = row0 + 8 * (j / 8), c = col0 + j % 8;
      if (r < v.rows && c < v.cols) v.out[r * v.cols + c] = static_cast<uint16_t>(w);
      if (r < v.rows && c + 1 < v.cols) v.out[r * v.cols + c + 1] = static_cast<uint16_t>(w >> 16);
    }
  }
  return !bad && used <= length;
}

}  // namespace df11::cuda::detail
