// encode_group(): exact round trips through an independent decoder for realistic, exhaustive,
// degenerate and boundary-sized inputs, with gaps and output positions checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "df11/encoder.h"
#include "encoder_test_data.h"
#include "group_check.h"

namespace df11 {
namespace {

using testing::all_codable_bf16;
using testing::bf16_with_exponents;
using testing::check_group;
using testing::gaussian_bf16;
using testing::Members;
using testing::round_trip;
using testing::TestRng;

uint16_t pattern(uint32_t exponent, uint32_t sign_mantissa) {
  return static_cast<uint16_t>(((sign_mantissa & 0x80) << 8) | (exponent << 7) |
                               (sign_mantissa & 0x7F));
}

TEST(EncodeGroup, AllCodablePatterns) {
  std::vector<uint16_t> all = all_codable_bf16();
  ASSERT_EQ(all.size(), 61440u);
  round_trip({all}, 1000);
  // Shuffled, in uneven members.
  TestRng rng(31);
  for (size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[rng.below(i)]);
  Members parts = {{all.begin(), all.begin() + 1},
                   {all.begin() + 1, all.begin() + 30000},
                   {all.begin() + 30000, all.end()}};
  round_trip(parts, 4097);
}

TEST(EncodeGroup, RealisticGaussianWeightsInSeveralMembers) {
  Members m = {gaussian_bf16(300000, 0.02, 1), gaussian_bf16(77777, 0.05, 2),
               gaussian_bf16(500001, 0.01, 3, 1e-3)};
  round_trip(m, 65536);
}

TEST(EncodeGroup, OneDistinctExponent) {
  TestRng rng(32);
  std::vector<uint16_t> w(100000);
  for (auto& x : w) x = pattern(120, static_cast<uint32_t>(rng.below(256)));
  GroupPlan plan;
  const auto b = encode_group(std::vector<std::span<const uint16_t>>{w}, &plan);
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(plan.n_bits, w.size()) << "one bit per weight";
  EXPECT_EQ(plan.entropy_bits, 0.0);
  check_group({w}, *b, plan);
  round_trip({w}, 999);
}

TEST(EncodeGroup, AllZeros) {
  round_trip({std::vector<uint16_t>(5000, 0)}, 64);
  round_trip({std::vector<uint16_t>(5000, 0x8000)}, 64);  // -0
}

TEST(EncodeGroup, TwoSymbols) {
  TestRng rng(33);
  std::vector<uint16_t> w(70001);
  for (auto& x : w)
    x = pattern(rng.below(10) == 0 ? 3 : 200, static_cast<uint32_t>(rng.below(256)));
  round_trip({w}, 7);
}

TEST(EncodeGroup, SteepDistributionWith220Exponents) {
  // Counts halve every few exponents; every exponent at least once: long codes, up to the
  // 32-bit limit and several subtables.
  TestRng rng(34);
  std::vector<uint16_t> w;
  for (uint32_t e = 0; e < 220; ++e) {
    const uint64_t count = std::max<uint64_t>(1, uint64_t(300000.0 * std::pow(0.75, e)));
    for (uint64_t k = 0; k < count; ++k)
      w.push_back(pattern(e, static_cast<uint32_t>(rng.below(256))));
  }
  for (size_t i = w.size(); i > 1; --i) std::swap(w[i - 1], w[rng.below(i)]);
  GroupPlan plan;
  const auto b = encode_group(std::vector<std::span<const uint16_t>>{w}, &plan);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_GT(plan.code.max_length, 16u);
  EXPECT_GT(plan.luts.size(), 2u * 256) << "uses subtables";
  check_group({w}, *b, plan);
  round_trip({w}, 12345);
}

TEST(EncodeGroup, OneElement) {
  round_trip({{0x3f80}});  // 1.0
  round_trip({{0x0001}});  // smallest subnormal
  round_trip({{0x8000}}, 1);
}

TEST(EncodeGroup, NonFiniteLookingButCodablePatterns) {
  // Exponent 239 is the largest codable; max finite / Inf / NaN are not (see errors test).
  round_trip({{pattern(239, 0x7F), pattern(239, 0xFF), pattern(0, 0), pattern(0, 0x80)}});
}

// One-bit codes make n_bits = n, so sizes land exactly on window and block edges.
TEST(EncodeGroup, SizesAroundWindowAndBlockBoundaries) {
  TestRng rng(35);
  for (uint64_t n : {63u, 64u, 65u, 127u, 128u, 129u, 32760u, 32767u, 32768u, 32769u, 32776u,
                     65535u, 65536u, 65537u}) {
    std::vector<uint16_t> w(n);
    for (auto& x : w)
      x = pattern(126 + static_cast<uint32_t>(rng.below(2)), static_cast<uint32_t>(rng.below(256)));
    SCOPED_TRACE(n);
    round_trip({w}, 1 + rng.below(5000));
  }
}

// spec 3.6: the last block may hold no code start. 32765 one-bit codes and two two-bit codes
// make 32769 bits (4097 bytes, 2 blocks); the last code starts at bit 32767, in block 0.
TEST(EncodeGroup, LastBlockWithoutACodeStart) {
  std::vector<uint16_t> w(32765, pattern(120, 1));
  w.push_back(pattern(121, 2));
  w.push_back(pattern(122, 3));
  GroupPlan plan;
  const auto b = encode_group(std::vector<std::span<const uint16_t>>{w}, &plan);
  ASSERT_TRUE(b.is_ok());
  ASSERT_EQ(plan.n_bits, 32769u);
  ASSERT_EQ(plan.n_blocks, 2u);
  EXPECT_EQ(load_le32(b->output_positions.data() + 4), w.size());
  EXPECT_EQ(load_le32(b->output_positions.data() + 8), w.size());
  EXPECT_EQ(plan.max_block_weights, w.size());
  check_group({w}, *b, plan);
  round_trip({w}, 32766);  // the last chunk holds only the code that opens no block
}

// Multi-length codes, many small sizes: tails of every shape.
TEST(EncodeGroup, ManySmallSizes) {
  TestRng rng(36);
  const std::vector<uint32_t> exps = {120, 121, 122, 119, 118, 123, 100, 130};
  const std::vector<double> weights = {40, 30, 15, 8, 4, 2, 0.5, 0.5};
  for (uint64_t n = 1; n <= 200; ++n) {
    SCOPED_TRACE(n);
    round_trip({bf16_with_exponents(n, exps, weights, n)}, 1 + rng.below(n + 3));
  }
  for (uint64_t n : {4095u * 3, 12000u, 13000u, 15000u, 20000u, 40000u}) {
    SCOPED_TRACE(n);
    round_trip({bf16_with_exponents(n, exps, weights, n)}, 1 + rng.below(3000));
  }
}

TEST(EncodeGroup, ChunksSpanningMemberBoundaries) {
  Members m;
  TestRng rng(37);
  for (int k = 0; k < 9; ++k) m.push_back(gaussian_bf16(1 + rng.below(3000), 0.02, 100 + k));
  for (uint64_t chunk : {1u, 2u, 3u, 100u, 1000u, 2999u, 100000u}) {
    SCOPED_TRACE(chunk);
    round_trip(m, chunk);
  }
}

}  // namespace
}  // namespace df11

namespace df11 {
namespace {

// predict_group_plan from the group's own full histogram is plan_group's sizing, exactly;
// from a sample it is close; errors are the documented ones.
TEST(PredictGroupPlan, FullHistogramGivesPlanGroupSizes) {
  const std::vector<uint16_t> a = testing::gaussian_bf16(300000, 0.02, 1);
  const std::vector<uint16_t> b = testing::gaussian_bf16(77777, 0.05, 2);
  const std::vector<std::span<const uint16_t>> members = {a, b};
  const Result<GroupPlan> exact = plan_group(members);
  ASSERT_TRUE(exact.is_ok());
  const Result<GroupPlan> predicted =
      predict_group_plan(exact->histogram, exact->n_elements, members.size());
  ASSERT_TRUE(predicted.is_ok()) << predicted.status().to_string();
  EXPECT_EQ(predicted->code.length, exact->code.length);
  EXPECT_EQ(predicted->luts, exact->luts);
  EXPECT_EQ(predicted->n_bits, exact->n_bits);
  EXPECT_EQ(predicted->n_bytes, exact->n_bytes);
  EXPECT_EQ(predicted->n_blocks, exact->n_blocks);
  EXPECT_EQ(predicted->gaps_bytes, exact->gaps_bytes);
  EXPECT_EQ(predicted->output_positions_bytes, exact->output_positions_bytes);
  EXPECT_EQ(predicted->split_positions.size(), exact->split_positions.size());
  EXPECT_DOUBLE_EQ(predicted->entropy_bits, exact->entropy_bits);

  // A 4096-weight slice from the middle of each member predicts within 2%.
  Histogram sample{};
  for (const auto& m : members) {
    const Histogram h = exponent_histogram(m.subspan(m.size() / 2 - 2048, 4096));
    for (int e = 0; e < 256; ++e) sample[e] += h[e];
  }
  const Result<GroupPlan> sampled = predict_group_plan(sample, exact->n_elements, 2);
  ASSERT_TRUE(sampled.is_ok());
  EXPECT_NEAR(static_cast<double>(sampled->n_bytes), static_cast<double>(exact->n_bytes),
              0.02 * static_cast<double>(exact->n_bytes));
}

TEST(PredictGroupPlan, Errors) {
  Histogram empty{};
  EXPECT_EQ(predict_group_plan(empty, 10, 1).status().code(), ErrorCode::kInvalidArgument);
  Histogram h{};
  h[120] = 5;
  EXPECT_EQ(predict_group_plan(h, 0, 1).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(predict_group_plan(h, 3, 4).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(predict_group_plan(h, uint64_t{1} << 32, 1).status().code(), ErrorCode::kUncodable);
  h[255] = 1;  // a NaN/Inf exponent in the sample
  EXPECT_EQ(predict_group_plan(h, 100, 1).status().code(), ErrorCode::kUncodable);
}

}  // namespace
}  // namespace df11
