// Optimality of package_merge_lengths() and lut_limited_lengths() against exhaustive search,
// plain Huffman and each other; count_subtables() against counting real prefixes.
#include "df11/code_lengths.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <queue>

#include "encoder_test_data.h"
#include "reference.h"

namespace df11 {
namespace {

using testing::reference_canonical;
using testing::reference_subtables;
using testing::TestRng;

uint64_t cost(std::span<const uint64_t> w, std::span<const uint8_t> l) {
  uint64_t c = 0;
  for (size_t i = 0; i < w.size(); ++i) c += w[i] * l[i];
  return c;
}

// Kraft sum in units of 2^-32.
uint64_t kraft(std::span<const uint8_t> l) {
  uint64_t k = 0;
  for (uint8_t x : l) k += uint64_t{1} << (32 - x);
  return k;
}

// Subtables of the canonical code for `l` under `shape`, by counting prefixes.
uint32_t prefixes_needed(std::span<const uint8_t> l, uint32_t index_bits) {
  const std::vector<uint32_t> bits = reference_canonical(l);
  return reference_subtables(l, bits, index_bits);
}

// Minimum cost over every length vector in [1, max_length]^n with Kraft sum <= 1 (and, if
// `shape` is given, whose canonical code fits it). UINT64_MAX if none.
uint64_t brute_force(std::span<const uint64_t> w, uint32_t max_length, const LutShape* shape) {
  const size_t n = w.size();
  std::vector<uint8_t> l(n, 1);
  uint64_t best = std::numeric_limits<uint64_t>::max();
  while (true) {
    if (kraft(l) <= (uint64_t{1} << 32) &&
        (shape == nullptr || prefixes_needed(l, shape->index_bits) <= shape->max_subtables)) {
      best = std::min(best, cost(w, l));
    }
    size_t i = 0;
    while (i < n && l[i] == max_length) l[i++] = 1;
    if (i == n) break;
    ++l[i];
  }
  return best;
}

// Plain (unlimited) Huffman cost: sum of merged weights.
uint64_t huffman_cost(std::span<const uint64_t> w) {
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> q(w.begin(), w.end());
  uint64_t total = 0;
  while (q.size() > 1) {
    const uint64_t a = q.top();
    q.pop();
    const uint64_t b = q.top();
    q.pop();
    total += a + b;
    q.push(a + b);
  }
  return total;
}

std::vector<uint64_t> random_weights(TestRng& rng, size_t n) {
  std::vector<uint64_t> w(n);
  const int style = static_cast<int>(rng.below(3));
  for (size_t i = 0; i < n; ++i) {
    if (style == 0) w[i] = 1 + rng.below(100);                           // flat-ish
    if (style == 1) w[i] = uint64_t{1} << rng.below(20);                 // skewed, many ties
    if (style == 2) w[i] = 1 + rng.below(uint64_t{1} << rng.below(30));  // anything
  }
  return w;
}

uint32_t min_length_for(size_t n) {
  uint32_t l = 1;
  while ((size_t{1} << l) < n) ++l;
  return l;
}

TEST(PackageMerge, MatchesBruteForceOnSmallAlphabets) {
  TestRng rng(1);
  int checked = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = 2 + rng.below(trial < 280 ? 5 : 6);  // 2..6, a few of 7
    const std::vector<uint64_t> w = random_weights(rng, n);
    for (uint32_t max_length = min_length_for(n); max_length <= 7; ++max_length) {
      const auto l = package_merge_lengths(w, max_length);
      ASSERT_TRUE(l.is_ok()) << l.status().to_string();
      for (uint8_t x : *l) ASSERT_LE(x, max_length);
      ASSERT_EQ(kraft(*l), uint64_t{1} << 32) << "an optimal code with positive weights is full";
      ASSERT_EQ(cost(w, *l), brute_force(w, max_length, nullptr))
          << "n=" << n << " max_length=" << max_length;
      ++checked;
    }
  }
  EXPECT_GT(checked, 500);
}

TEST(PackageMerge, EqualsHuffmanWhenTheLimitDoesNotBind) {
  TestRng rng(2);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = 2 + rng.below(239);
    const std::vector<uint64_t> w = random_weights(rng, n);
    const auto l = package_merge_lengths(w, 32);
    ASSERT_TRUE(l.is_ok()) << l.status().to_string();
    // Weights < 2^30 summing below 2^38: a Huffman tree deeper than 32 needs
    // Fibonacci-like growth that these inputs rarely have; skip those that might.
    const uint64_t h = huffman_cost(w);
    EXPECT_LE(cost(w, *l), h);
    uint32_t longest = 0;
    for (uint8_t x : *l) longest = std::max<uint32_t>(longest, x);
    if (longest < 32) {
      EXPECT_EQ(cost(w, *l), h) << "n=" << n;
    }
  }
}

// Fibonacci-like weights, each value three times: an unlimited Huffman code would be ~75
// levels deep.
std::vector<uint64_t> steep_weights(size_t n) {
  std::vector<uint64_t> fib = {1, 1};
  while (fib.size() < n / 3 + 2) fib.push_back(fib[fib.size() - 1] + fib[fib.size() - 2]);
  std::vector<uint64_t> w(n);
  for (size_t i = 0; i < n; ++i) w[i] = fib[i / 3];
  return w;
}

TEST(PackageMerge, SteepSkewRespectsEveryLimit) {
  const std::vector<uint64_t> w = steep_weights(222);
  uint64_t previous = 0;
  for (uint32_t max_length : {32u, 24u, 16u, 12u, 9u, 8u}) {
    const auto l = package_merge_lengths(w, max_length);
    ASSERT_TRUE(l.is_ok()) << l.status().to_string();
    uint32_t longest = 0;
    for (uint8_t x : *l) longest = std::max<uint32_t>(longest, x);
    EXPECT_EQ(longest, max_length) << "the limit binds for this skew";
    EXPECT_EQ(kraft(*l), uint64_t{1} << 32);
    // A tighter limit can only cost more.
    EXPECT_GE(cost(w, *l), previous);
    previous = cost(w, *l);
    // The exact DP (no table limit: index_bits past the longest code) agrees on the cost.
    const auto dp = lut_limited_lengths(w, max_length, LutShape{32, 0});
    ASSERT_TRUE(dp.is_ok()) << dp.status().to_string();
    EXPECT_EQ(cost(w, *dp), cost(w, *l)) << "max_length=" << max_length;
  }
}

TEST(PackageMerge, HeaviestSymbolsGetShortestCodes) {
  const std::vector<uint64_t> w = {5, 1, 9, 9, 2, 7, 1, 1, 30};
  const auto l = package_merge_lengths(w, 4);
  ASSERT_TRUE(l.is_ok());
  for (size_t i = 0; i < w.size(); ++i) {
    for (size_t j = 0; j < w.size(); ++j) {
      if (w[i] > w[j]) {
        EXPECT_LE((*l)[i], (*l)[j]) << i << " vs " << j;
      }
    }
  }
}

TEST(PackageMerge, RejectsBadArguments) {
  const std::vector<uint64_t> one = {5};
  const std::vector<uint64_t> zero = {5, 0};
  const std::vector<uint64_t> five = {1, 2, 3, 4, 5};
  const std::vector<uint64_t> two = {1, 2};
  const std::vector<uint64_t> huge = {uint64_t{1} << 58, 1};
  EXPECT_EQ(package_merge_lengths(one, 8).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(package_merge_lengths(zero, 8).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(package_merge_lengths(five, 2).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(package_merge_lengths(five, 3).is_ok());
  EXPECT_EQ(package_merge_lengths(two, 0).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(package_merge_lengths(two, 33).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(package_merge_lengths(huge, 8).status().code(), ErrorCode::kInvalidArgument);
  std::vector<uint64_t> big(256, 1);
  EXPECT_EQ(package_merge_lengths(big, 8).status().code(), ErrorCode::kInvalidArgument);
}

// The table-limited DP against exhaustive search, with small artificial table shapes so that
// the limit binds with alphabets small enough to enumerate.
TEST(LutLimited, MatchesBruteForceWithSmallTableShapes) {
  TestRng rng(3);
  int binding = 0, infeasible = 0, checked = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const size_t n = 2 + rng.below(trial < 140 ? 5 : 6);
    const std::vector<uint64_t> w = random_weights(rng, n);
    for (uint32_t index_bits : {1u, 2u, 3u}) {
      for (uint32_t budget : {0u, 1u, 2u, 3u}) {
        const LutShape shape{index_bits, budget};
        const uint32_t max_length = min_length_for(n) + static_cast<uint32_t>(rng.below(3));
        if (max_length > 7) continue;
        const uint64_t best = brute_force(w, max_length, &shape);
        const auto l = lut_limited_lengths(w, max_length, shape);
        ++checked;
        if (best == std::numeric_limits<uint64_t>::max()) {
          EXPECT_EQ(l.status().code(), ErrorCode::kUncodable);
          ++infeasible;
          continue;
        }
        ASSERT_TRUE(l.is_ok()) << l.status().to_string();
        for (uint8_t x : *l) ASSERT_LE(x, max_length);
        EXPECT_LE(prefixes_needed(*l, index_bits), budget);
        EXPECT_EQ(count_subtables(*l, shape), prefixes_needed(*l, index_bits));
        EXPECT_EQ(cost(w, *l), best) << "n=" << n << " max_length=" << max_length
                                     << " index_bits=" << index_bits << " budget=" << budget;
        if (best > brute_force(w, max_length, nullptr)) ++binding;
      }
    }
  }
  // The trial mix must actually exercise the table limit.
  EXPECT_GT(binding, 40);
  EXPECT_GT(infeasible, 10);
  EXPECT_GT(checked, 1000);
}

TEST(LutLimited, EqualsPackageMergeWhenTheTableLimitDoesNotBind) {
  TestRng rng(4);
  for (int trial = 0; trial < 60; ++trial) {
    const size_t n = 2 + rng.below(60);
    const std::vector<uint64_t> w = random_weights(rng, n);
    const uint32_t max_length =
        min_length_for(n) + static_cast<uint32_t>(rng.below(33 - min_length_for(n)));
    const auto pm = package_merge_lengths(w, max_length);
    ASSERT_TRUE(pm.is_ok());
    const LutShape roomy{8, 255};
    const auto dp = lut_limited_lengths(w, max_length, roomy);
    ASSERT_TRUE(dp.is_ok()) << dp.status().to_string();
    EXPECT_EQ(cost(w, *dp), cost(w, *pm)) << "n=" << n << " max_length=" << max_length;
  }
}

TEST(LutLimited, FullCodeUnderTheDf11Shape) {
  // 120 heavier and 120 lighter symbols: package-merge puts the light ones at 9 bits, which
  // needs ~60 subtables; the DP must find the best code with at most 16.
  std::vector<uint64_t> w(240);
  for (size_t i = 0; i < w.size(); ++i) w[i] = i < 120 ? 100 : 40;
  const auto pm = package_merge_lengths(w, 32);
  ASSERT_TRUE(pm.is_ok());
  ASSERT_GT(count_subtables(*pm, LutShape{}), kMaxSubtables);
  const auto dp = lut_limited_lengths(w, 32, LutShape{});
  ASSERT_TRUE(dp.is_ok()) << dp.status().to_string();
  EXPECT_LE(prefixes_needed(*dp, 8), kMaxSubtables);
  EXPECT_EQ(kraft(*dp), uint64_t{1} << 32);
  EXPECT_GE(cost(w, *dp), cost(w, *pm));
  // Never worse than the simplest fix: all 240 symbols at 7 or 8 bits.
  const auto flat = package_merge_lengths(w, 8);
  ASSERT_TRUE(flat.is_ok());
  EXPECT_LE(cost(w, *dp), cost(w, *flat));
  // And no worse than lowering the length limit until the table limit holds.
  for (uint32_t max_length = 31; max_length >= 8; --max_length) {
    const auto lower = package_merge_lengths(w, max_length);
    ASSERT_TRUE(lower.is_ok());
    if (count_subtables(*lower, LutShape{}) <= kMaxSubtables) {
      EXPECT_LE(cost(w, *dp), cost(w, *lower));
      break;
    }
  }
}

TEST(CountSubtables, EqualsDistinctPrefixesOfCanonicalCodes) {
  TestRng rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = 2 + rng.below(239);
    std::vector<uint64_t> w = random_weights(rng, n);
    if (trial % 3 == 0) w = steep_weights(n);
    const uint32_t max_length =
        std::max(min_length_for(n), 9 + static_cast<uint32_t>(rng.below(24)));
    const auto l = package_merge_lengths(w, max_length);
    ASSERT_TRUE(l.is_ok());
    for (uint32_t index_bits : {3u, 5u, 8u}) {
      EXPECT_EQ(count_subtables(*l, LutShape{index_bits, 0}), prefixes_needed(*l, index_bits));
    }
  }
  // Incomplete codes count too: two 9-bit codes share one 8-bit prefix.
  const std::vector<uint8_t> two_long = {9, 9};
  EXPECT_EQ(count_subtables(two_long, LutShape{}), 1u);
  const std::vector<uint8_t> three_long = {9, 9, 9};
  EXPECT_EQ(count_subtables(three_long, LutShape{}), 2u);
}

}  // namespace
}  // namespace df11
