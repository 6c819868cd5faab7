// The histogram kernel shared by exponent_histogram() and plan_group(): counts the 8-bit
// exponents (BF16 bits 7..14, spec 2.1) of a run of patterns.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "df11/member_stream.h"

namespace df11 {

// Eight sub-histograms so that consecutive patterns with the same exponent (the common case:
// a few exponents dominate) increment different counters, instead of each increment waiting
// for the previous store to the same counter (eight rather than four: +10% patterns per
// second in encoder_bench on a 2-core AMD EPYC; 8 KiB, still well inside L1).
struct ExponentCounts {
  uint32_t sub[8][256];
};

// Adds the exponents of p[0..n) to `counts`. Each counter grows by at most n, so callers
// keep the total per ExponentCounts below 2^32.
inline void count_exponents(const uint16_t* p, uint64_t n, ExponentCounts& counts) {
  // Four patterns per 64-bit load: pattern k sits in bits 16k..16k+15 on a little-endian
  // host, so its exponent is bits 16k+7..16k+14.
  static_assert(std::endian::native == std::endian::little, "the 64-bit load assumes LE");
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v0, v1;
    std::memcpy(&v0, p + i, 8);
    std::memcpy(&v1, p + i + 4, 8);
    ++counts.sub[0][(v0 >> 7) & 0xFF];
    ++counts.sub[1][(v0 >> 23) & 0xFF];
    ++counts.sub[2][(v0 >> 39) & 0xFF];
    ++counts.sub[3][(v0 >> 55) & 0xFF];
    ++counts.sub[4][(v1 >> 7) & 0xFF];
    ++counts.sub[5][(v1 >> 23) & 0xFF];
    ++counts.sub[6][(v1 >> 39) & 0xFF];
    ++counts.sub[7][(v1 >> 55) & 0xFF];
  }
  for (; i < n; ++i) ++counts.sub[i & 7][(p[i] >> 7) & 0xFF];
}

using ChunkCounts = std::array<uint32_t, 256>;  // a chunk holds < 2^32 weights

// Exponent counts of each chunk of `stream` (chunk c = weights [c * chunk_weights,
// (c + 1) * chunk_weights)), in parallel: 1 KiB per chunk. chunk_weights < 2^32.
// `weights_read` (may be empty) is told of each chunk once it is counted, `weights_to_read`
// (may be empty) just before.
std::vector<ChunkCounts> count_chunk_exponents(
    const MemberStream& stream, uint64_t chunk_weights,
    const std::function<void(uint64_t, uint64_t)>& weights_read = {},
    const std::function<void(uint64_t, uint64_t)>& weights_to_read = {});

}  // namespace df11
