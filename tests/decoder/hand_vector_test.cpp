// A group written out byte by byte from the spec rules, with its expected BF16 values.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "df11/decoder.h"
#include "df11/group.h"

namespace df11 {
namespace {

// Code (spec 2.3, canonical): exponent 127 -> "0", 126 -> "10", 128 -> "11".
// Weights' exponents 127, 126, 128, 127, 127, 128 give the bits 0 10 11 0 0 11 = 9 bits:
// 01011001 1(0000000 padding) = 0x59 0x80.
struct TinyGroup {
  std::vector<uint8_t> luts = std::vector<uint8_t>(2 * 256, 0);
  std::vector<uint8_t> encoded_exponent = {0x59, 0x80};
  std::vector<uint8_t> sign_mantissa = {0x00, 0x92, 0x7F, 0xFF, 0x01, 0x80};
  std::vector<uint8_t> output_positions = {0, 0, 0, 0, 6, 0, 0, 0};  // uint32 LE [0, 6]
  std::vector<uint8_t> gaps = std::vector<uint8_t>(320, 0);  // ceil(5 * 512 / 8), window 0: 0
  std::vector<uint8_t> split_positions;

  TinyGroup() {
    // Root row: indexed by the next 8 bits; "0xxxxxxx" -> 127, "10xxxxxx" -> 126,
    // "11xxxxxx" -> 128.
    for (int i = 0; i < 128; ++i) luts[i] = 127;
    for (int i = 128; i < 192; ++i) luts[i] = 126;
    for (int i = 192; i < 256; ++i) luts[i] = 128;
    // Lengths row.
    luts[256 + 127] = 1;
    luts[256 + 126] = 2;
    luts[256 + 128] = 2;
  }
  GroupView view() const {
    return GroupView{luts, encoded_exponent, sign_mantissa, output_positions,
                     gaps, split_positions};
  }
};

// sign | exponent << 7 | mantissa, worked by hand: 1.0, -0.5 - ..., etc.
constexpr std::array<uint16_t, 6> kExpected = {0x3F80, 0xBF12, 0x407F, 0xBFFF, 0x3F81, 0xC000};

TEST(HandVector, ValidatesWithExpectedInfo) {
  TinyGroup t;
  Result<GroupInfo> info = validate_group(t.view(), "tiny");
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->n_elements, 6u);
  EXPECT_EQ(info->n_bytes, 2u);
  EXPECT_EQ(info->n_blocks, 1u);
  EXPECT_EQ(info->n_luts, 2u);
  EXPECT_EQ(info->max_block_weights, 6u);
  EXPECT_EQ(info->code_lengths[127], 1);
  EXPECT_EQ(info->code_lengths[126], 2);
  EXPECT_EQ(info->code_lengths[128], 2);
  EXPECT_EQ(info->code_lengths[0], 0);
}

TEST(HandVector, BothDecodersGiveExactValues) {
  TinyGroup t;
  std::array<uint16_t, 6> ref{};
  Status s = decode_group_reference(t.view(), ref, "tiny");
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(ref, kExpected);
  std::array<uint16_t, 6> fast{};
  s = decode_group(t.view(), fast, "tiny");
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(fast, kExpected);
}

TEST(HandVector, FastDecodesEveryRange) {
  TinyGroup t;
  for (uint64_t first = 0; first <= 6; ++first) {
    for (uint64_t size = 0; first + size <= 6; ++size) {
      std::vector<uint16_t> out(size);
      Status s = decode_group(t.view(), out, "tiny", first);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      for (uint64_t i = 0; i < size; ++i) EXPECT_EQ(out[i], kExpected[first + i]);
    }
  }
  std::vector<uint16_t> out(2);
  EXPECT_EQ(decode_group(t.view(), out, "tiny", 5).code(), ErrorCode::kInvalidArgument);
}

// The padding bits after the last code are not part of any code: the official encoder fills
// them with a prefix of its EOF code, so any value decodes.
TEST(HandVector, PaddingBitsAreIgnored) {
  TinyGroup t;
  t.encoded_exponent[1] = 0xFF;
  std::array<uint16_t, 6> out{};
  ASSERT_TRUE(decode_group_reference(t.view(), out, "tiny").is_ok());
  EXPECT_EQ(out, kExpected);
  ASSERT_TRUE(decode_group(t.view(), out, "tiny").is_ok());
  EXPECT_EQ(out, kExpected);
}

TEST(HandVector, ExtraWholeByteIsCorrupt) {
  TinyGroup t;
  t.encoded_exponent.push_back(0);
  std::array<uint16_t, 6> out{};
  Status ref = decode_group_reference(t.view(), out, "tiny");
  EXPECT_EQ(ref.code(), ErrorCode::kCorruptData) << ref.to_string();
  EXPECT_EQ(ref.message(),
            "tiny: the 6 codes end at bit 9, but encoded_exponent has 3 bytes (only the last "
            "byte may hold padding)");
  EXPECT_EQ(decode_group(t.view(), out, "tiny").code(), ErrorCode::kCorruptData);
}

TEST(HandVector, WrongGapNamesFieldAndOffset) {
  TinyGroup t;
  t.gaps[0] = 0x38;  // field 0 = 0b00111 = 7
  std::array<uint16_t, 6> out{};
  Status ref = decode_group_reference(t.view(), out, "group 'P'");
  EXPECT_EQ(ref.code(), ErrorCode::kBadGap);
  EXPECT_EQ(ref.message(), "group 'P': gaps field 0 = 7, first code in window starts at bit 0");
  EXPECT_EQ(decode_group(t.view(), out, "group 'P'").code(), ErrorCode::kBadGap);
}

// Stream "0 10 11 0 0 1|1" cut to 1 byte: the 6th code needs a bit past the end.
TEST(HandVector, CodeRunningPastTheEndIsCorrupt) {
  TinyGroup t;
  t.encoded_exponent = {0x59};
  t.sign_mantissa.resize(6);
  std::array<uint16_t, 6> out{};
  // n = 6 <= 8 * 1 byte, so validation passes; the stream is one bit short.
  ASSERT_TRUE(validate_group(t.view(), "tiny").is_ok());
  Status ref = decode_group_reference(t.view(), out, "tiny");
  EXPECT_EQ(ref.code(), ErrorCode::kCorruptData) << ref.to_string();
  EXPECT_EQ(decode_group(t.view(), out, "tiny").code(), ErrorCode::kCorruptData);
}

// Zero padding bits decode as 1-bit codes of exponent 127: a group claiming a 7th weight
// is valid (its code is the first padding bit), one claiming 16 runs past the end.
TEST(HandVector, PaddingCanHoldCodesButNotPastTheEnd) {
  TinyGroup t;
  t.sign_mantissa.push_back(0x05);
  store_le32(t.output_positions.data() + 4, 7);
  std::array<uint16_t, 7> out7{};
  ASSERT_TRUE(decode_group_reference(t.view(), out7, "tiny").is_ok());
  EXPECT_EQ(out7[6], 0x3F85);
  ASSERT_TRUE(decode_group(t.view(), out7, "tiny").is_ok());
  EXPECT_EQ(out7[6], 0x3F85);

  t.sign_mantissa.resize(16);
  store_le32(t.output_positions.data() + 4, 16);
  std::array<uint16_t, 16> out16{};
  Status ref = decode_group_reference(t.view(), out16, "tiny");
  EXPECT_EQ(ref.code(), ErrorCode::kCorruptData);
  EXPECT_EQ(ref.message(), "tiny: the stream ends (bit 16) after 13 codes, n_elements = 16");
  EXPECT_EQ(decode_group(t.view(), out16, "tiny").code(), ErrorCode::kCorruptData);
}

TEST(HandVector, WrongOutputSizeIsInvalidArgument) {
  TinyGroup t;
  std::array<uint16_t, 5> out{};
  EXPECT_EQ(decode_group_reference(t.view(), out, "tiny").code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace df11
