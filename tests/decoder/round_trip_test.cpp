// encode_group (df11_encoder) -> both CPU decoders: exact round trips of raw uint16 patterns,
// for every codable pattern, realistic and degenerate distributions and boundary sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "decoder_checks.h"
#include "decoder_test_groups.h"
#include "df11/decoder.h"
#include "df11/encoder.h"
#include "encoder_test_data.h"

namespace df11 {
namespace {

GroupBuffers encode_members(const std::vector<std::vector<uint16_t>>& members) {
  std::vector<std::span<const uint16_t>> spans(members.begin(), members.end());
  Result<GroupBuffers> g = encode_group(spans);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  return g.is_ok() ? std::move(g).value() : GroupBuffers{};
}

GroupBuffers encode(const std::vector<uint16_t>& weights) {
  return encode_members(std::vector<std::vector<uint16_t>>{weights});
}

void expect_round_trip(const std::vector<uint16_t>& weights, uint32_t seed = 1) {
  const GroupBuffers g = encode(weights);
  test::expect_decodes_to(g.view(), weights, seed);
}

TEST(RoundTrip, EveryCodablePattern) {
  std::vector<uint16_t> all = testing::all_codable_bf16();
  ASSERT_EQ(all.size(), 61440u);
  expect_round_trip(all);
  std::mt19937_64 rng(4);
  std::shuffle(all.begin(), all.end(), rng);
  expect_round_trip(all, 2);
}

TEST(RoundTrip, GaussianWeights) {
  for (uint64_t n : {1000ull, 100000ull, 1000003ull}) {
    SCOPED_TRACE(n);
    expect_round_trip(testing::gaussian_bf16(n, 0.02, n, 1e-3), static_cast<uint32_t>(n));
  }
}

TEST(RoundTrip, RandomCodablePatterns) {
  std::mt19937_64 rng(8);
  std::vector<uint16_t> w(300000);
  for (auto& x : w) {
    do x = static_cast<uint16_t>(rng());
    while (((x >> 7) & 0xFF) >= 240);
  }
  expect_round_trip(w);
}

TEST(RoundTrip, DegenerateDistributions) {
  SCOPED_TRACE("one exponent");
  std::vector<uint16_t> one(70000);
  for (size_t i = 0; i < one.size(); ++i) one[i] = static_cast<uint16_t>(0x3F80 | (i & 0x807F));
  expect_round_trip(one);

  SCOPED_TRACE("all +0");
  expect_round_trip(std::vector<uint16_t>(100000, 0x0000));
  SCOPED_TRACE("+-0");
  std::vector<uint16_t> zeros(100000);
  for (size_t i = 0; i < zeros.size(); ++i) zeros[i] = (i * 7919) % 3 ? 0x8000 : 0x0000;
  expect_round_trip(zeros);

  SCOPED_TRACE("two symbols");
  std::vector<uint16_t> two(50001);
  for (size_t i = 0; i < two.size(); ++i) two[i] = (i % 5) ? 0x3F80 : 0xC000;
  expect_round_trip(two);
}

// `count(e)` weights of each exponent e < n_exponents, shuffled.
std::vector<uint16_t> with_counts(uint32_t n_exponents, uint64_t (*count)(uint32_t)) {
  std::vector<uint16_t> w;
  for (uint32_t e = 0; e < n_exponents; ++e) {
    for (uint64_t k = 0; k < count(e); ++k) {
      w.push_back(static_cast<uint16_t>((e << 7) | ((k * 37) & 0x807F)));
    }
  }
  std::mt19937_64 rng(6);
  std::shuffle(w.begin(), w.end(), rng);
  return w;
}

uint64_t fibonacci(uint32_t e) {  // 1, 1, 2, 3, 5, ...
  uint64_t a = 1, b = 1;
  for (uint32_t i = 0; i < e; ++i) {
    const uint64_t next = a + b;
    a = b;
    b = next;
  }
  return a;
}

// Round trip of a code the encoder had to limit; returns its longest code length.
uint32_t limited_round_trip(const std::vector<uint16_t>& w, int n_ranges) {
  GroupPlan plan;
  std::span<const uint16_t> m(w);
  Result<GroupBuffers> g = encode_group(std::span<const std::span<const uint16_t>>(&m, 1), &plan);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  if (!g.is_ok()) return 0;
  Result<GroupInfo> info = validate_group(g->view(), "g");
  EXPECT_TRUE(info.is_ok());
  EXPECT_EQ(info->unusable_lut_entries, 0u);
  test::expect_decodes_to(g->view(), w, 1, n_ranges);
  return plan.code.max_length;
}

// 34 exponents with Fibonacci counts (14.9M weights, the fewest that need it) make the
// deepest Huffman tree: 33 levels. The encoder must limit the code to 32 bits. Two ranged
// decodes only: this one is slow under sanitizers.
TEST(RoundTrip, FibonacciCountsForceMaxCodeLength) {
  EXPECT_EQ(limited_round_trip(with_counts(34, fibonacci), 2), kMaxCodeLength);
}

// 224 exponents, steeply skewed (2^-k for 18 of them, then 206 seen once): ~200 long codes
// whose lookup tables must fit in 16 subtables (spec 2.4).
TEST(RoundTrip, SteepSkewWith224ExponentsForcesTableLimit) {
  const uint32_t max_length = limited_round_trip(
      with_counts(224, [](uint32_t e) { return e < 18 ? uint64_t{1} << (18 - e) : uint64_t{1}; }),
      12);
  EXPECT_GT(max_length, 8u);
  EXPECT_LE(max_length, kMaxCodeLength);
}

TEST(RoundTrip, OneElement) {
  for (uint16_t w : {0x0000, 0x8000, 0x3F80, 0x777F, 0x0001, 0xF77F}) {
    expect_round_trip({w});
  }
}

// With one symbol (1-bit codes) every weight is one bit: n = 32768 k + d puts the stream
// end on each side of window and block boundaries.
TEST(RoundTrip, SizesAroundWindowAndBlockBoundaries) {
  for (uint64_t n : {63ull, 64ull, 65ull, 4095ull * 8, 4096ull * 8 - 1, 4096ull * 8,
                     4096ull * 8 + 1, 4097ull * 8, 2 * 32768ull + 7}) {
    std::vector<uint16_t> w(n);
    for (uint64_t i = 0; i < n; ++i) w[i] = static_cast<uint16_t>(0x3F80 | ((i * 13) & 0x807F));
    SCOPED_TRACE(n);
    expect_round_trip(w, static_cast<uint32_t>(n));
  }
  // Realistic codes: stream sizes straddling 1..3 blocks.
  for (uint64_t n : {12000ull, 12600ull, 12700ull, 25300ull, 25400ull, 37900ull}) {
    SCOPED_TRACE(n);
    expect_round_trip(testing::gaussian_bf16(n, 0.02, 100 + n), static_cast<uint32_t>(n));
  }
}

TEST(RoundTrip, MultiMemberGroup) {
  std::vector<std::vector<uint16_t>> members = {
      testing::gaussian_bf16(4096, 0.02, 1), testing::gaussian_bf16(1, 0.5, 2),
      testing::gaussian_bf16(77777, 0.01, 3), testing::gaussian_bf16(30000, 0.05, 4)};
  const GroupBuffers g = encode_members(members);
  std::vector<uint16_t> all;
  std::vector<int64_t> splits;
  for (const auto& m : members) {
    all.insert(all.end(), m.begin(), m.end());
    splits.push_back(static_cast<int64_t>(all.size()));
  }
  splits.pop_back();
  ASSERT_EQ(g.split_positions.size(), 8 * splits.size());
  for (size_t i = 0; i < splits.size(); ++i) {
    EXPECT_EQ(static_cast<int64_t>(load_le64(g.split_positions.data() + 8 * i)), splits[i]);
  }
  test::expect_decodes_to(g.view(), all);
  // Each member decodes on its own as a range.
  uint64_t first = 0;
  for (const auto& m : members) {
    std::vector<uint16_t> out(m.size());
    ASSERT_TRUE(decode_group(g.view(), out, "g", first).is_ok());
    EXPECT_EQ(out, m);
    first += m.size();
  }
}

TEST(RoundTrip, RangedDecodeEqualsFullDecode) {
  const std::vector<uint16_t> w = testing::gaussian_bf16(500000, 0.02, 9);
  const GroupBuffers g = encode(w);
  Result<GroupInfo> info = validate_group(g.view(), "g");
  ASSERT_TRUE(info.is_ok());
  std::mt19937_64 rng(10);
  for (int k = 0; k < 200; ++k) {
    const uint64_t first = rng() % w.size();
    const uint64_t size = rng() % std::min<uint64_t>(w.size() - first + 1, k % 2 ? 40000 : 300);
    std::vector<uint16_t> out(size);
    ASSERT_TRUE(decode_group(g.view(), out, "g", first, &*info).is_ok());
    ASSERT_TRUE(std::equal(out.begin(), out.end(), w.begin() + first)) << first << "+" << size;
  }
}

TEST(RoundTrip, EncodingTwiceGivesIdenticalBytes) {
  const std::vector<uint16_t> w = testing::gaussian_bf16(200000, 0.02, 11);
  const GroupBuffers a = encode(w);
  const GroupBuffers b = encode(w);
  EXPECT_EQ(a.luts, b.luts);
  EXPECT_EQ(a.encoded_exponent, b.encoded_exponent);
  EXPECT_EQ(a.sign_mantissa, b.sign_mantissa);
  EXPECT_EQ(a.output_positions, b.output_positions);
  EXPECT_EQ(a.gaps, b.gaps);
  EXPECT_EQ(a.split_positions, b.split_positions);
}

// The encoder's stream, gaps and output positions equal the test-only writer's for the same
// code lengths: two independent implementations of spec 2.3 and 3.4-3.6.
TEST(RoundTrip, EncoderMatchesHandWriter) {
  const std::vector<uint16_t> w = testing::gaussian_bf16(150000, 0.02, 12, 1e-3);
  GroupPlan plan;
  std::span<const uint16_t> m(w);
  Result<GroupBuffers> g = encode_group(std::span<const std::span<const uint16_t>>(&m, 1), &plan);
  ASSERT_TRUE(g.is_ok());
  test::CodeLengths lengths{};
  std::copy(plan.code.length.begin(), plan.code.length.end(), lengths.begin());
  const GroupBuffers hand = test::hand_encode(test::canonical_code(lengths), w);
  EXPECT_TRUE(g->encoded_exponent == hand.encoded_exponent);
  EXPECT_TRUE(g->gaps == hand.gaps);
  EXPECT_TRUE(g->output_positions == hand.output_positions);
  EXPECT_TRUE(g->sign_mantissa == hand.sign_mantissa);
}

TEST(RoundTrip, UncodableExponentsAreRejectedByTheEncoder) {
  for (uint16_t w : {0x7F80, 0x7FC0, 0xFF80, 0x7800}) {  // +Inf, NaN, -Inf, exponent 240
    std::vector<uint16_t> v = {0x3F80, w};
    std::span<const uint16_t> m(v);
    Result<GroupBuffers> g = encode_group(std::span<const std::span<const uint16_t>>(&m, 1));
    EXPECT_EQ(g.status().code(), ErrorCode::kUncodable) << w;
  }
}

}  // namespace
}  // namespace df11
