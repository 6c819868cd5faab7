// build_code(): canonical assignment, limits, degenerate histograms and errors.
#include <gtest/gtest.h>

#include <limits>

#include "df11/code_lengths.h"
#include "df11/encoder.h"
#include "encoder_test_data.h"
#include "reference.h"

namespace df11 {
namespace {

using testing::reference_canonical;
using testing::reference_subtables;
using testing::TestRng;

uint64_t code_cost(const Histogram& h, const Code& c) {
  uint64_t total = 0;
  for (int e = 0; e < 256; ++e) total += h[e] * c.length[e];
  return total;
}

uint64_t kraft(const Code& c) {
  uint64_t k = 0;
  for (int e = 0; e < 256; ++e) {
    if (c.length[e] != 0) k += uint64_t{1} << (32 - c.length[e]);
  }
  return k;
}

// Checks everything spec 2.3 and 2.4 promise about a built code for `h`.
void expect_valid_code(const Histogram& h, const Code& c, uint32_t max_length = 32) {
  uint32_t longest = 0, symbols = 0;
  for (int e = 0; e < 256; ++e) {
    EXPECT_EQ(h[e] != 0, c.length[e] != 0) << "exponent " << e;
    longest = std::max<uint32_t>(longest, c.length[e]);
    symbols += c.length[e] != 0;
  }
  EXPECT_EQ(c.max_length, longest);
  EXPECT_LE(longest, max_length);
  // Canonical: the same bits as an independent canonical assignment.
  const std::vector<uint32_t> bits = reference_canonical(c.length);
  for (int e = 0; e < 256; ++e) {
    if (c.length[e] != 0) {
      EXPECT_EQ(c.bits[e], bits[e]) << "exponent " << e;
    }
  }
  // Canonical, stated directly: ordered by (length, exponent), left-aligned codes increase.
  uint64_t prev = 0;
  bool first = true;
  for (uint32_t len = 1; len <= 32; ++len) {
    for (int e = 0; e < 256; ++e) {
      if (c.length[e] != len) continue;
      const uint64_t aligned = uint64_t{c.bits[e]} << (32 - len);
      if (first) {
        EXPECT_EQ(aligned, 0u) << "first code is all zeros";
      } else {
        EXPECT_GT(aligned, prev);
      }
      prev = aligned;
      first = false;
    }
  }
  if (symbols >= 2) {
    EXPECT_EQ(kraft(c), uint64_t{1} << 32);
  }
  EXPECT_LE(reference_subtables(c.length, bits), kMaxSubtables);
}

TEST(BuildCode, RandomHistogramsAreCanonicalAndWithinLimits) {
  TestRng rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    Histogram h{};
    const int symbols = 1 + static_cast<int>(rng.below(240));
    for (int k = 0; k < symbols; ++k)
      h[rng.below(240)] += 1 + rng.below(uint64_t{1} << rng.below(34));
    const auto c = build_code(h);
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    expect_valid_code(h, *c);
    const auto again = build_code(h);
    ASSERT_TRUE(again.is_ok());
    EXPECT_EQ(again->length, c->length);
    EXPECT_EQ(again->bits, c->bits);
  }
}

// Exhaustive optimum for a histogram with few symbols.
uint64_t brute_force_cost(const Histogram& h, uint32_t max_length) {
  std::vector<uint64_t> w;
  for (uint64_t x : h) {
    if (x != 0) w.push_back(x);
  }
  std::vector<uint32_t> l(w.size(), 1);
  uint64_t best = std::numeric_limits<uint64_t>::max();
  while (true) {
    uint64_t k = 0, cost = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      k += uint64_t{1} << (32 - l[i]);
      cost += w[i] * l[i];
    }
    if (k <= (uint64_t{1} << 32)) best = std::min(best, cost);
    size_t i = 0;
    while (i < l.size() && l[i] == max_length) l[i++] = 1;
    if (i == l.size()) break;
    ++l[i];
  }
  return best;
}

TEST(BuildCode, OptimalForSmallAlphabetsAndLimits) {
  TestRng rng(12);
  for (int trial = 0; trial < 120; ++trial) {
    Histogram h{};
    const int symbols = 2 + static_cast<int>(rng.below(5));
    for (int k = 0; k < symbols; ++k)
      h[rng.below(240)] += 1 + rng.below(uint64_t{1} << rng.below(16));
    int distinct = 0;
    for (uint64_t x : h) distinct += x != 0;
    for (uint32_t max_length = 1; max_length <= 6; ++max_length) {
      const auto c = build_code(h, max_length);
      if ((1 << max_length) < distinct) {
        EXPECT_EQ(c.status().code(), ErrorCode::kInvalidArgument);
        continue;
      }
      ASSERT_TRUE(c.is_ok()) << c.status().to_string();
      expect_valid_code(h, *c, max_length);
      EXPECT_EQ(code_cost(h, *c), brute_force_cost(h, max_length));
    }
  }
}

TEST(BuildCode, OneSymbolGetsAOneBitCode) {
  Histogram h{};
  h[127] = 1000;
  const auto c = build_code(h);
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->length[127], 1);
  EXPECT_EQ(c->bits[127], 0u);
  EXPECT_EQ(c->max_length, 1u);
  for (int e = 0; e < 256; ++e) {
    if (e != 127) {
      EXPECT_EQ(c->length[e], 0);
    }
  }
}

TEST(BuildCode, TwoSymbolsGetZeroAndOne) {
  Histogram h{};
  h[200] = 5;
  h[3] = 1;
  const auto c = build_code(h);
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->length[3], 1);
  EXPECT_EQ(c->length[200], 1);
  EXPECT_EQ(c->bits[3], 0u);  // equal lengths: smaller exponent first
  EXPECT_EQ(c->bits[200], 1u);
}

TEST(BuildCode, SteepSkewWith220Symbols) {
  Histogram h{};
  uint64_t a = 1, b = 1;
  for (int e = 0; e < 220; ++e) {
    h[e] = a;
    if (e % 3 == 2) {  // Fibonacci, each value three times
      const uint64_t c = a + b;
      a = b;
      b = c;
    }
  }
  for (uint32_t max_length : {32u, 20u, 12u, 8u}) {
    const auto c = build_code(h, max_length);
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    expect_valid_code(h, *c, max_length);
    EXPECT_EQ(c->max_length, max_length) << "the length limit binds";
  }
}

TEST(BuildCode, TableLimitFallbackIsUsedAndBeatsLoweringTheLengthLimit) {
  // 120 exponents at 7-8 bits and 120 at 9 bits: the package-merge code needs far more than 16
  // subtables, so build_code must take the table-limited path.
  Histogram h{};
  std::vector<uint64_t> w;
  for (int e = 0; e < 240; ++e) {
    h[e] = e < 120 ? 100 : 40;
    w.push_back(h[e]);
  }
  const auto pm = package_merge_lengths(w, 32);
  ASSERT_TRUE(pm.is_ok());
  ASSERT_GT(count_subtables(*pm, LutShape{}), kMaxSubtables);
  const auto c = build_code(h);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  expect_valid_code(h, *c);
  uint64_t pm_cost = 0;
  for (int e = 0; e < 240; ++e) pm_cost += h[e] * (*pm)[e];
  EXPECT_GE(code_cost(h, *c), pm_cost);
  for (uint32_t max_length : {31u, 24u, 16u, 12u, 9u, 8u}) {
    const auto lower = build_code(h, max_length);
    ASSERT_TRUE(lower.is_ok());
    EXPECT_LE(code_cost(h, *c), code_cost(h, *lower)) << max_length;
  }
  EXPECT_TRUE(build_luts(*c).is_ok());
}

TEST(BuildCode, UncodableExponentsAreNamed) {
  for (uint32_t e : {240u, 247u, 255u}) {
    Histogram h{};
    h[100] = 10;
    h[e] = 3;
    const auto c = build_code(h);
    ASSERT_EQ(c.status().code(), ErrorCode::kUncodable) << e;
    EXPECT_NE(c.status().message().find("exponent " + std::to_string(e)), std::string::npos)
        << c.status().message();
    EXPECT_NE(c.status().message().find("3 times"), std::string::npos) << c.status().message();
  }
  Histogram ok{};
  ok[239] = 1;  // the largest codable exponent
  EXPECT_TRUE(build_code(ok).is_ok());
}

TEST(BuildCode, RejectsEmptyHistogramAndBadLimits) {
  EXPECT_EQ(build_code(Histogram{}).status().code(), ErrorCode::kInvalidArgument);
  Histogram h{};
  h[1] = 1;
  h[2] = 1;
  EXPECT_EQ(build_code(h, 0).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(build_code(h, 33).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(build_code(h, 1).is_ok());
  h[3] = 1;
  EXPECT_EQ(build_code(h, 1).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace df11
