// Decoding groups built from chosen code lengths (tests/common/decoder_test_groups.h), so
// that every LUT depth, code length and block/window boundary case is reached on purpose.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "decoder_checks.h"
#include "decoder_test_groups.h"
#include "df11/decoder.h"

namespace df11 {
namespace {

using test::canonical_code;
using test::hand_encode;

std::vector<uint8_t> exponent_range(uint8_t first, int count) {
  std::vector<uint8_t> v(count);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// `n` weights with exponents drawn uniformly from [first, first + count), coded with the
// unary lengths 1, 2, ..., count - 1, count - 1 (deep codes: depth 3 from 26 symbols on).
struct UnaryGroup {
  std::vector<uint16_t> weights;
  GroupBuffers g;
};

UnaryGroup unary_group(uint8_t first, int count, uint64_t n, uint64_t seed,
                       std::span<const int64_t> splits = {}) {
  const std::vector<uint8_t> symbols = exponent_range(first, count);
  std::mt19937_64 rng(seed);
  UnaryGroup u;
  u.weights = test::weights_with_exponents(symbols, n, rng);
  u.g = hand_encode(canonical_code(test::unary_lengths(symbols)), u.weights, splits);
  return u;
}

// Lengths 1..32, 32: every depth of the LUTs and the longest legal code.
TEST(HandCodeDecode, DeepestCodeEveryLength) {
  const UnaryGroup u = unary_group(90, 33, 20000, 11);
  EXPECT_EQ(u.g.luts.size(), 5u * 256);
  test::expect_decodes_to(u.g.view(), u.weights);
}

// One symbol: a 1-bit code, one weight per bit, so weight counts land exactly on window and
// block boundaries.
TEST(HandCodeDecode, OneBitCodeAroundBoundaries) {
  test::CodeLengths len{};
  len[0] = 1;  // all-zero weights (+0 and -0)
  const auto code = canonical_code(len);
  std::mt19937_64 rng(3);
  for (uint64_t n : {1ull, 7ull, 8ull, 9ull, 63ull, 64ull, 65ull, 32767ull, 32768ull, 32769ull,
                     65536ull, 65537ull, 3 * 32768ull + 100}) {
    std::vector<uint16_t> weights(n);
    for (auto& w : weights) w = (rng() & 1) ? 0x8000 : 0x0000;
    const GroupBuffers g = hand_encode(code, weights);
    SCOPED_TRACE(n);
    test::expect_decodes_to(g.view(), weights, static_cast<uint32_t>(n));
  }
}

// Codes of 5..31 bits straddle window and block boundaries at every offset; 8-bit codes of
// 200 symbols give one root entry per symbol.
TEST(HandCodeDecode, FixedLengthCodes) {
  for (uint8_t length : {5, 7, 8, 9, 13, 17, 31}) {
    // At most 16 subtables: 9-bit codes of 32 symbols use 16 distinct first bytes, 17-bit
    // codes of 16 symbols one first byte and 8 distinct first two bytes.
    const int count = length < 8 ? (1 << length) : length == 9 ? 32 : length == 17 ? 16 : 200;
    const std::vector<uint8_t> symbols = exponent_range(20, count);
    test::CodeLengths len{};
    for (uint8_t s : symbols) len[s] = length;
    const auto code = canonical_code(len);
    std::mt19937_64 rng(length);
    const auto weights = test::weights_with_exponents(symbols, 30000 + length, rng);
    SCOPED_TRACE(int{length});
    test::expect_decodes_to(hand_encode(code, weights).view(), weights, length);
  }
}

// A stream whose last block holds no code start: the last code of block 0 runs into it.
TEST(HandCodeDecode, EmptyLastBlock) {
  test::CodeLengths len{};
  len[1] = 1;   // "0"
  len[2] = 20;  // 20-bit codes
  len[3] = 20;
  const auto code = canonical_code(len);
  // 32760 one-bit codes, then a 20-bit code starting at bit 32760 and ending at 32780:
  // 4098 bytes, 2 blocks, and block 1 has no code start.
  std::vector<uint16_t> weights(32761, uint16_t{1} << 7);
  weights.back() = uint16_t{3} << 7;
  const GroupBuffers g = hand_encode(code, weights);
  ASSERT_EQ(g.encoded_exponent.size(), 4098u);
  EXPECT_EQ(read_output_position(g.view(), 1), 32761u);
  EXPECT_EQ(read_output_position(g.view(), 2), 32761u);
  test::expect_decodes_to(g.view(), weights);
}

// One symbol: a 1-bit code leaves root entries 128..255 without a symbol (here exponent 0,
// whose length is 0): valid, and never reached by a valid stream.
TEST(HandCodeDecode, OneSymbolCodeLeavesUnusableEntries) {
  test::CodeLengths len{};
  len[127] = 1;
  std::vector<uint16_t> weights(1000);
  std::mt19937_64 rng(2);
  for (auto& w : weights) w = static_cast<uint16_t>((rng() & 0x807F) | (127u << 7));
  GroupBuffers g = hand_encode(canonical_code(len), weights);
  Result<GroupInfo> info = validate_group(g.view(), "g");
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->unusable_lut_entries, 128u);
  test::expect_decodes_to(g.view(), weights);
  g.encoded_exponent[5] |= 0x10;  // a "1" bit: the code reaches an unusable entry
  std::vector<uint16_t> out(weights.size());
  const Status s = decode_group_reference(g.view(), out, "g");
  EXPECT_EQ(s.code(), ErrorCode::kCorruptData);
  EXPECT_EQ(s.message(),
            "g: code 43 at bit 43 reaches luts row 0 index 128 = 0, an entry no valid code uses");
  EXPECT_EQ(decode_group(g.view(), out, "g").code(), ErrorCode::kCorruptData);
}

// What the official encoder writes: its code has an EOF symbol that has no exponent value,
// is not in the lengths row, and whose LUT entries hold a copy of the entry before them
// (possibly from the previous row). Its stream ends with a prefix of the EOF code as padding.
// Such a group must decode.
TEST(HandCodeDecode, OfficialEofEntriesAreAccepted) {
  std::vector<uint8_t> symbols = exponent_range(100, 31);  // exponent 130 stands for EOF
  const auto code = canonical_code(test::unary_lengths(symbols));
  const uint8_t eof = 130;  // length 30: "1" * 30, row 3 entries 252..255
  symbols.pop_back();
  std::mt19937_64 rng(12);
  const auto weights = test::weights_with_exponents(symbols, 3001, rng);
  GroupBuffers g = hand_encode(code, weights);
  ASSERT_EQ(g.luts.size(), 5u * 256);
  uint8_t* row3 = g.luts.data() + 3 * 256;
  ASSERT_EQ(row3[252], eof);
  for (int i = 252; i < 256; ++i) row3[i] = g.luts[2 * 256 + 255];  // a pointer to row 3
  g.luts[4 * 256 + eof] = 0;
  uint64_t end_bit = 0;
  for (uint16_t w : weights) end_bit += code.length[test::exponent_of(w)];
  if (end_bit % 8 != 0) g.encoded_exponent.back() |= static_cast<uint8_t>(0xFF >> (end_bit % 8));

  Result<GroupInfo> info = validate_group(g.view(), "g");
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->unusable_lut_entries, 4u);
  EXPECT_EQ(info->code_lengths[eof], 0);
  test::expect_decodes_to(g.view(), weights);
}

TEST(HandCodeDecode, MultiMemberSplitsDoNotChangeDecoding) {
  const std::vector<int64_t> splits = {1, 1000, 4999};
  const UnaryGroup u = unary_group(120, 12, 5000, 5, splits);
  ASSERT_TRUE(validate_group(u.g.view(), "g").is_ok());
  test::expect_decodes_to(u.g.view(), u.weights);
}

// Every gap field of a window with a code start is checked: a wrong one must be found.
TEST(HandCodeDecode, BothDecodersCheckEveryWindowGap) {
  UnaryGroup u = unary_group(100, 30, 4000, 9);
  GroupBuffers& g = u.g;
  const std::vector<uint16_t>& weights = u.weights;
  const uint64_t window = 300;  // inside block 0, not its first window
  ASSERT_LT(window * 64, 8 * g.encoded_exponent.size());
  const uint32_t gap = read_gap(g.gaps, window);
  test::write_gap(g.gaps, window, (gap + 1) % 32);
  std::vector<uint16_t> out(weights.size());
  const Status s = decode_group_reference(g.view(), out, "group 'P'");
  EXPECT_EQ(s.code(), ErrorCode::kBadGap);
  EXPECT_EQ(s.message(), "group 'P': gaps field 300 = " + std::to_string((gap + 1) % 32) +
                             ", first code in window starts at bit " + std::to_string(gap));
  // The fast decoder checks every window its blocks' codes start in, with the same message.
  EXPECT_EQ(decode_group(g.view(), out, "group 'P'").to_string(), s.to_string());
}

// Faults at block seams: the fast decoder finds them with its per-block checks and reports
// exactly the reference decoder's error (spec 4.5).
TEST(HandCodeDecode, FastDecoderChecksBlockSeams) {
  const UnaryGroup u = unary_group(100, 30, 9000, 10);
  const GroupBuffers& good = u.g;
  const std::vector<uint16_t>& weights = u.weights;
  ASSERT_GE(good.view().n_blocks(), 3u);
  const uint32_t op1 = read_output_position(good.view(), 1);
  std::vector<uint16_t> out(weights.size());
  auto expect_fault = [&](const GroupBuffers& g, ErrorCode code, const std::string& message) {
    const Status ref = decode_group_reference(g.view(), out, "g");
    EXPECT_EQ(ref.code(), code) << ref.to_string();
    EXPECT_EQ(ref.message(), message);
    EXPECT_EQ(decode_group(g.view(), out, "g").to_string(), ref.to_string());
  };

  GroupBuffers g = good;  // block 1's first gap moved: block 0 no longer ends there
  const uint32_t gap = read_gap(good.gaps, 512);
  test::write_gap(g.gaps, 512, (gap + 1) % 32);
  expect_fault(g, ErrorCode::kBadGap,
               "g: gaps field 512 = " + std::to_string((gap + 1) % 32) +
                   ", first code in window starts at bit " + std::to_string(gap));

  g = good;  // one weight moved from block 1 to block 0: its code starts in block 1
  test::write_output_position(g.output_positions, 1, op1 + 1);
  expect_fault(g, ErrorCode::kBadOutputPositions,
               "g: output_positions[1] = " + std::to_string(op1 + 1) + ", but " +
                   std::to_string(op1) + " codes start before bit 32768");

  g = good;  // one weight moved from block 0 to block 1: block 0's next code is its own
  test::write_output_position(g.output_positions, 1, op1 - 1);
  expect_fault(g, ErrorCode::kBadOutputPositions,
               "g: output_positions[1] = " + std::to_string(op1 - 1) + ", but " +
                   std::to_string(op1) + " codes start before bit 32768");

  g = good;  // the stream's first code must start at bit 0
  test::write_gap(g.gaps, 0, 3);
  expect_fault(g, ErrorCode::kBadGap, "g: gaps field 0 = 3, first code in window starts at bit 0");

  // Ranged decodes check the seams of the blocks they touch.
  g = good;
  test::write_gap(g.gaps, 1024, (read_gap(g.gaps, 1024) + 5) % 32);
  std::vector<uint16_t> piece(5);
  EXPECT_EQ(decode_group(g.view(), piece, "g", op1 + 10).code(), ErrorCode::kBadGap);
  EXPECT_TRUE(decode_group(g.view(), piece, "g", 3).is_ok());  // block 0 is intact
}

}  // namespace
}  // namespace df11
