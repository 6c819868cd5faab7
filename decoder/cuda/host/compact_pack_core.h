// BF16 -> the compact execution layout (spec/EXEC_COMPACT.md section 4) one lane of one tile at
// a time, written once for two compilers: the GPU transcode (compact_pack.cu, nvcc) and its
// host emulation (compact_emulation.cpp) include this file, so that tests without a GPU check
// that the transcode writes exactly the reference encoder's bytes. Three passes, one warp per
// tile: the exponents' histogram; each lane's codeword bits, which give the tile's lane table
// and its total; after a scan of the totals on the host, each lane's byte-plane bytes and
// codewords.
#pragma once

#include <cstdint>

#include "compact_core.h"  // DF11_HD, compact_load_16, CompactView
#include "df11/exec_compact.h"

namespace df11::cuda::detail {

// The BF16 matrix a transcode reads (rows x cols, row-major, on the device or the host).
struct CompactSource {
  const uint16_t* w;
  uint32_t rows, cols;
  uint64_t steps, tiles_per_strip, tiles;  // the 12-bit layout's geometry
};

// Lane `lane`'s 16 weights of step q of strip `strip` as the layout stores them (spec,
// the four words of its byte-plane bytes and the 16 exponents, padding weights +0.
DF11_HD void compact_lane_pairs(const CompactSource& s, uint64_t strip, uint64_t q, uint32_t lane,
                                uint32_t (&bytes)[4], uint32_t (&e)[kExecSlots]) {
  const uint64_t col0 = q * kExecStepCols + 8 * (lane % 4);
  for (uint32_t w4 = 0; w4 < 4; ++w4) bytes[w4] = 0;
  for (uint32_t half = 0; half < 2; ++half) {
    const uint64_t r = strip * kExecStripRows + lane / 4 + 8 * half;
    for (uint32_t k = 0; k < 4; ++k) {
      const uint32_t j = 8 * half + 2 * k;
      const uint64_t c = col0 + 2 * k;
      const uint32_t w0 = r < s.rows && c < s.cols ? s.w[r * s.cols + c] : 0;
      const uint32_t w1 = r < s.rows && c + 1 < s.cols ? s.w[r * s.cols + c + 1] : 0;
      const uint32_t both = w1 << 16 | w0;
      const uint32_t p = both << 1 | both >> 31;
      bytes[j / 4] |= ((p & 0xFF) | ((p >> 16) & 0xFF) << 8) << (8 * (j % 4));
      e[j] = (p >> 8) & 0xFF;
      e[j + 1] = p >> 24;
    }
  }
}

// The bits of lane `lane`'s codewords in tile t, by `lengths` (the code's 256 lengths).
DF11_HD uint32_t compact_lane_code_bits(const CompactSource& s, const uint8_t* lengths, uint64_t t,
                                        uint32_t lane) {
  const uint64_t strip = t / s.tiles_per_strip;
  const uint64_t first = (t % s.tiles_per_strip) * kExecTileSteps;
  const uint64_t end = first + kExecTileSteps < s.steps ? first + kExecTileSteps : s.steps;
  uint32_t n = 0;
  for (uint64_t q = first; q < end; ++q) {
    uint32_t bytes[4], e[kExecSlots];
    compact_lane_pairs(s, strip, q, lane, bytes, e);
    for (uint32_t j = 0; j < kExecSlots; ++j) n += lengths[e[j]];
  }
  return n;
}

// The lane table's lane_base for lanes of lo..hi codeword bits (spec 4.2).
DF11_HD uint32_t compact_lane_base_of(uint32_t lo, uint32_t hi) {
  return hi > kCompactMaxLaneDelta && hi - kCompactMaxLaneDelta > lo ? hi - kCompactMaxLaneDelta
                                                                     : lo;
}

// Writes lane `lane` of tile t: its byte-plane bytes into blob + byte_plane and its codewords
// from stream bit `start` on. `or_word(k, bits)` ORs bits into the stream's u32 word k (an
// atomicOr on the device: two lanes' runs can share a word); the stream is zero beforehand, so
// the zeros after a lane's codewords need no writing.
template <class OrWord>
DF11_HD void compact_pack_lane(const CompactSource& s, const uint32_t* codewords,
                               const uint8_t* lengths, uint8_t* byte_plane, uint64_t t,
                               uint32_t lane, uint64_t start, OrWord or_word) {
  const uint64_t strip = t / s.tiles_per_strip;
  const uint64_t first = (t % s.tiles_per_strip) * kExecTileSteps;
  const uint64_t end = first + kExecTileSteps < s.steps ? first + kExecTileSteps : s.steps;
  uint64_t pos = start;
  uint64_t acc = 0;  // bits of word pos / 32 (from bit 0 of that word) not yet written
  for (uint64_t q = first; q < end; ++q) {
    uint32_t bytes[4], e[kExecSlots];
    compact_lane_pairs(s, strip, q, lane, bytes, e);
    uint8_t* dst = byte_plane + ((strip * s.steps + q) * kExecLanes + lane) * kExecSlots;
#if defined(__CUDA_ARCH__)
    *reinterpret_cast<uint4*>(dst) = make_uint4(bytes[0], bytes[1], bytes[2], bytes[3]);
#else
    for (uint32_t k = 0; k < 16; ++k) dst[k] = static_cast<uint8_t>(bytes[k / 4] >> (8 * (k % 4)));
#endif
    for (uint32_t j = 0; j < kExecSlots; ++j) {
      const uint32_t len = lengths[e[j]];
      acc |= uint64_t{codewords[e[j]]} << (pos % 32);
      const uint64_t word = pos / 32;
      pos += len;
      if (pos / 32 != word) {  // word `word` is complete (as far as this lane goes)
        or_word(word, static_cast<uint32_t>(acc));
        acc >>= 32;
      }
    }
  }
  if (pos % 32 != 0) or_word(pos / 32, static_cast<uint32_t>(acc));
}

}  // namespace df11::cuda::detail
