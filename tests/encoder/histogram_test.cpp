// exponent_histogram() against a plain loop.
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include "df11/encoder.h"
#include "encoder_test_data.h"

namespace df11 {
namespace {

Histogram naive(std::span<const uint16_t> w) {
  Histogram h{};
  for (uint16_t x : w) ++h[(x >> 7) & 0xFF];
  return h;
}

TEST(ExponentHistogram, MatchesAPlainLoop) {
  testing::TestRng rng(51);
  for (uint64_t n :
       {0u, 1u, 3u, 7u, 8u, 9u, 15u, 1000u, (1u << 20) - 1, (1u << 20) + 9, 3u * (1u << 20) + 5}) {
    std::vector<uint16_t> w(n);
    for (auto& x : w) x = static_cast<uint16_t>(rng.next());
    EXPECT_EQ(exponent_histogram(w), naive(w)) << n;
  }
}

TEST(ExponentHistogram, EveryPatternOnce) {
  std::vector<uint16_t> w(65536);
  for (uint32_t v = 0; v < 65536; ++v) w[v] = static_cast<uint16_t>(v);
  const Histogram h = exponent_histogram(w);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(h[e], 256u) << e;
}

TEST(ExponentHistogram, SameAtAnyThreadCount) {
  const std::vector<uint16_t> w = testing::gaussian_bf16(5000000, 0.02, 52);
  const Histogram want = naive(w);
  for (int threads : {1, 2, 8}) {
    tbb::task_arena arena(threads);
    arena.execute([&] { EXPECT_EQ(exponent_histogram(w), want) << threads; });
  }
}

}  // namespace
}  // namespace df11
