// The GPU's XXH3_64bits as its host emulation runs it (xxh3_core.h: block sums, then the
// scramble chains, then the finish), against libxxhash's (df11::xxh3_64): every length up to
// several blocks, each short-input branch, and lengths around the block and stripe borders.
#include "xxh3_emulation.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "df11/hash.h"

namespace df11 {
namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(Xxh3Emulation, EveryLengthUpToFourBlocks) {
  const std::vector<uint8_t> data = random_bytes(4 * 1024 + 200, 7);
  for (size_t n = 0; n <= data.size(); ++n) {
    const std::span<const uint8_t> s(data.data(), n);
    ASSERT_EQ(cuda::xxh3_64_emulated(s, xxh3_default_secret()), xxh3_64(s)) << n << " bytes";
  }
}

TEST(Xxh3Emulation, BlockAndStripeBordersOfLargeInputs) {
  const std::vector<uint8_t> data = random_bytes((1u << 20) + 4096, 11);
  for (size_t base : {size_t{64} << 10, size_t{1} << 20}) {
    for (size_t n : {base - 1025, base - 1024, base - 1023, base - 65, base - 64, base - 63,
                     base - 1, base, base + 1, base + 63, base + 64, base + 1000}) {
      const std::span<const uint8_t> s(data.data(), n);
      EXPECT_EQ(cuda::xxh3_64_emulated(s, xxh3_default_secret()), xxh3_64(s)) << n << " bytes";
    }
  }
}

TEST(Xxh3Emulation, ConstantAndExtremeBytes) {
  for (uint8_t fill : {uint8_t{0}, uint8_t{0xFF}, uint8_t{0x80}}) {
    const std::vector<uint8_t> data(70000, fill);
    for (size_t n : {size_t{0}, size_t{3}, size_t{8}, size_t{16}, size_t{128}, size_t{240},
                     size_t{241}, size_t{1025}, data.size()}) {
      const std::span<const uint8_t> s(data.data(), n);
      EXPECT_EQ(cuda::xxh3_64_emulated(s, xxh3_default_secret()), xxh3_64(s)) << n;
    }
  }
}

TEST(Xxh3Emulation, TheSecretIsXxh3s) {
  // The empty input's digest depends on the secret alone: libxxhash's is 2d06800538d394c2.
  EXPECT_EQ(hex64(cuda::xxh3_64_emulated({}, xxh3_default_secret())), "2d06800538d394c2");
}

}  // namespace
}  // namespace df11
