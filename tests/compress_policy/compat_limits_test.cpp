// The dfloat11 loader's limits (spec 3.7) as the compressor applies them: which group sizes
// must be stored unchanged, decided on sizes alone (no 2^31-weight allocation needed).
#include <gtest/gtest.h>

#include <string>

#include "df11/block_limits.h"
#include "df11/group.h"

namespace df11::app {
namespace {

TEST(CompatLimits, SpecValues) {
  EXPECT_EQ(kMaxElementsCompat, (uint64_t{1} << 31) - 1);
  EXPECT_EQ(kMaxBlocksCompat, 524'287u);
  EXPECT_EQ(kMaxWeightsPerBlockCompat, 23'550u);
  // The largest compatible stream's byte count also fits in an int (the kernel's n_bytes).
  EXPECT_LE(kMaxBlocksCompat * kBytesPerBlock, kMaxElementsCompat);
  EXPECT_EQ(kMaxBlocksCompat * kBytesPerBlock, 2'147'479'552u);
}

TEST(CompatLimits, Elements) {
  EXPECT_EQ(compat_violation({kMaxElementsCompat, 0, 0}), "");
  const std::string why = compat_violation({kMaxElementsCompat + 1, 0, 0});
  EXPECT_NE(why.find("2147483648 weights, above the loader's limit of 2147483647"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("Max_Elements_Compat"), std::string::npos) << why;
  // A 405B-style transformer block grouped whole: 2.6e9 weights.
  EXPECT_NE(compat_violation({2'600'000'000, 0, 0}), "");
}

TEST(CompatLimits, Blocks) {
  EXPECT_EQ(compat_violation({1'000'000'000, kMaxBlocksCompat, 0}), "");
  const std::string why = compat_violation({1'000'000'000, kMaxBlocksCompat + 1, 0});
  EXPECT_NE(why.find("524288 blocks"), std::string::npos) << why;
  EXPECT_NE(why.find("Max_Blocks_Compat"), std::string::npos) << why;
}

TEST(CompatLimits, WeightsPerBlock) {
  EXPECT_EQ(compat_violation({100'000, 25, kMaxWeightsPerBlockCompat}), "");
  const std::string why = compat_violation({100'000, 4, kMaxWeightsPerBlockCompat + 1});
  EXPECT_NE(why.find("23551 weights would start in one 4096-byte block"), std::string::npos) << why;
  EXPECT_NE(why.find("23550"), std::string::npos) << why;
}

TEST(CompatLimits, FirstLimitInOrderAndUnknownSizes) {
  // Elements first: a caller asks before planning, with the other sizes unknown (0).
  const std::string why = compat_violation(
      {kMaxElementsCompat + 1, kMaxBlocksCompat + 1, kMaxWeightsPerBlockCompat + 1});
  EXPECT_NE(why.find("Max_Elements_Compat"), std::string::npos) << why;
  EXPECT_NE(compat_violation({5, kMaxBlocksCompat + 1, kMaxWeightsPerBlockCompat + 1})
                .find("Max_Blocks_Compat"),
            std::string::npos);
  EXPECT_EQ(compat_violation({}), "");
}

}  // namespace
}  // namespace df11::app
