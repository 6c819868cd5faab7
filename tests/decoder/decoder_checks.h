// Assertions shared by the decoder tests: both decoders, full and ranged, against the
// original BF16 patterns (raw uint16 comparison).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "df11/decoder.h"
#include "df11/group.h"

namespace df11::test {

// Both decoders reproduce `weights` exactly; the fast one also from a given GroupInfo and
// for `n_ranges` element ranges (first/last weight, then random pieces).
inline void expect_decodes_to(const GroupView& g, std::span<const uint16_t> weights,
                              uint32_t seed = 1, int n_ranges = 12) {
  const std::vector<uint16_t> want(weights.begin(), weights.end());
  std::vector<uint16_t> out(weights.size(), 0xDEAD);
  Status s = decode_group_reference(g, out, "ref");
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_TRUE(out == want) << "reference decoder output differs";

  std::fill(out.begin(), out.end(), 0xDEAD);
  s = decode_group(g, out, "fast");
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_TRUE(out == want) << "fast decoder output differs";

  Result<GroupInfo> info = validate_group(g, "info");
  ASSERT_TRUE(info.is_ok());
  std::mt19937_64 rng(seed);
  const uint64_t n = weights.size();
  for (int k = 0; k < n_ranges; ++k) {
    uint64_t first = rng() % n;
    uint64_t size = 1 + rng() % (n - first);
    if (k == 0) first = 0, size = 1;
    if (k == 1) first = n - 1, size = 1;
    if (k == 2) size = std::min<uint64_t>(size, 1 + rng() % 100);
    std::vector<uint16_t> piece(size, 0xDEAD);
    s = decode_group(g, piece, "ranged", first, k % 2 ? &*info : nullptr);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_TRUE(std::equal(piece.begin(), piece.end(), want.begin() + first))
        << "range [" << first << ", +" << size << ") differs";
  }
}

// `n` BF16 patterns whose exponents are drawn uniformly from `exponents`, random sign and
// mantissa.
inline std::vector<uint16_t> weights_with_exponents(std::span<const uint8_t> exponents, uint64_t n,
                                                    std::mt19937_64& rng) {
  std::vector<uint16_t> w(n);
  for (auto& x : w) {
    const uint64_t r = rng();
    x = static_cast<uint16_t>((r & 0x807F) |
                              (uint32_t{exponents[(r >> 16) % exponents.size()]} << 7));
  }
  return w;
}

}  // namespace df11::test
