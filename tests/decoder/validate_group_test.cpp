// validate_group(): one test per rule of spec 3.8, each with the exact error code.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "decoder_test_groups.h"
#include "df11/decoder.h"
#include "df11/group.h"

namespace df11 {
namespace {

using test::hand_encode;

void expect_error(const Status& s, ErrorCode code, const std::string& message_part) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(message_part), std::string::npos) << s.message();
}

// 30 symbols (exponents 100..129) with unary code lengths 1..29, 29: the LUTs have a root,
// subtables at depths 1, 2 and 3 (rows 1..3, each reached through entry 0xFF of the row
// above) and the lengths row 4. Symbols drawn uniformly: ~19 KB of stream, 5 blocks.
class ValidateGroup : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<uint8_t> symbols;
    for (uint8_t s = 100; s < 130; ++s) symbols.push_back(s);
    code_ = test::canonical_code(test::unary_lengths(symbols));
    std::mt19937 rng(7);
    for (int i = 0; i < 10000; ++i) {
      const uint16_t e = symbols[rng() % symbols.size()];
      weights_.push_back(static_cast<uint16_t>((rng() & 0x807F) | (e << 7)));
    }
    g_ = hand_encode(code_, weights_);
    ASSERT_EQ(g_.luts.size(), 5u * 256);
    ASSERT_EQ(g_.encoded_exponent.size() / kBytesPerBlock + 1, 5u);
  }

  Status validate() const { return validate_group(g_.view(), "g").status(); }
  void expect_unusable(uint32_t count, uint32_t row, uint32_t entry);

  uint8_t& lut(uint32_t row, uint32_t index) { return g_.luts[row * 256 + index]; }
  uint8_t& length_of(uint32_t symbol) { return g_.luts[4 * 256 + symbol]; }
  void set_op(uint64_t b, uint32_t v) { test::write_output_position(g_.output_positions, b, v); }
  uint32_t op(uint64_t b) const { return read_output_position(g_.view(), b); }

  test::HandCode code_;
  std::vector<uint16_t> weights_;
  GroupBuffers g_;
};

TEST_F(ValidateGroup, ValidGroupFillsInfo) {
  Result<GroupInfo> info = validate_group(g_.view(), "g");
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->n_elements, weights_.size());
  EXPECT_EQ(info->n_blocks, 5u);
  EXPECT_EQ(info->n_luts, 5u);
  uint32_t max_block = 0;
  for (uint64_t b = 0; b < 5; ++b) max_block = std::max(max_block, op(b + 1) - op(b));
  EXPECT_EQ(info->max_block_weights, max_block);
  for (uint32_t s = 0; s < 256; ++s) EXPECT_EQ(info->code_lengths[s], code_.length[s]) << s;
  const int8_t depths[kMaxLutRows] = {0,  1,  2,  3,  -1, -1, -1, -1, -1,
                                      -1, -1, -1, -1, -1, -1, -1, -1, -1};
  EXPECT_TRUE(std::equal(depths, depths + kMaxLutRows, info->lut_row_depth));
  EXPECT_EQ(info->unusable_lut_entries, 0u);
}

TEST_F(ValidateGroup, PointerToMissingRow) {
  lut(0, 0xFF) = 256 - 10;
  const Status s = validate();
  EXPECT_EQ(s.code(), ErrorCode::kBadLut);
  EXPECT_EQ(s.message(),
            "g: luts row 0 index 255 = 246 points to row 10, which does not exist (luts has 5 "
            "rows)");
}

TEST_F(ValidateGroup, PointerToLengthsRow) {
  lut(2, 0xFF) = 256 - 4;
  expect_error(validate(), ErrorCode::kBadLut,
               "luts row 2 index 255 = 252 points to row 4, which is the code-lengths row");
}

// Entries that no valid code uses are counted by validation (valid groups have them: see
// OfficialEofEntriesAreAccepted) and rejected by both decoders when a code reaches them;
// `entry` is the value of the entry reached.
void ValidateGroup::expect_unusable(uint32_t count, uint32_t row, uint32_t entry) {
  Result<GroupInfo> info = validate_group(g_.view(), "g");
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->unusable_lut_entries, count);
  const std::string where = "reaches luts row " + std::to_string(row) + " index ";
  const std::string what = " = " + std::to_string(entry) + ", an entry no valid code uses";
  std::vector<uint16_t> out(weights_.size());
  for (const Status& s :
       {decode_group_reference(g_.view(), out, "g"), decode_group(g_.view(), out, "g")}) {
    expect_error(s, ErrorCode::kCorruptData, where);
    expect_error(s, ErrorCode::kCorruptData, what);
  }
}

TEST_F(ValidateGroup, CycleIsUnusable) {
  lut(1, 0xFF) = 256 - 1;  // row 1 points to itself; rows 2 and 3 are no longer reachable
  expect_unusable(1, 1, 255);
  const GroupInfo info = *validate_group(g_.view(), "g");
  EXPECT_EQ(info.lut_row_depth[1], 1);
  EXPECT_EQ(info.lut_row_depth[2], -1);
  EXPECT_EQ(info.lut_row_depth[3], -1);
}

TEST_F(ValidateGroup, PointerBackToShallowerRowIsUnusable) {
  lut(2, 0xFF) = 256 - 1;  // depth 2 -> row 1 (depth 1)
  expect_unusable(1, 2, 255);
}

TEST_F(ValidateGroup, FifthLevelIsUnusable) {
  // A row 4 below row 3 (lengths move to row 5): codes would need 5 levels, over 32 bits.
  g_.luts.insert(g_.luts.begin() + 4 * 256, 256, 0);
  lut(3, 0xFF) = 256 - 4;
  expect_unusable(1, 3, 252);
  EXPECT_EQ(validate_group(g_.view(), "g")->lut_row_depth[4], -1);
}

TEST_F(ValidateGroup, CodeLengthZeroIsUnusable) {
  length_of(100) = 0;  // symbol 100 has the 1-bit code "0": root entries 0..127
  expect_unusable(128, 0, 100);
}

TEST_F(ValidateGroup, CodeLengthAbove32IsUnusable) {
  length_of(129) = 33;  // a depth-3 symbol: "11111" after 24 ones, row 3 entries 248..255
  expect_unusable(8, 3, 129);
}

TEST_F(ValidateGroup, CodeLengthInconsistentWithDepthIsUnusable) {
  length_of(101) = 9;  // "10": found in the root, so 1..8 bits
  expect_unusable(64, 0, 101);
  length_of(101) = 2;
  length_of(110) = 8;  // 11 bits: found in row 1 (depth 1), so 9..16 bits
  expect_unusable(32, 1, 110);
}

TEST_F(ValidateGroup, UnreachableRowsAreNotChecked) {
  g_.luts.insert(g_.luts.begin() + 4 * 256, 256, 250);  // row 4: pointers nobody follows
  EXPECT_TRUE(validate().is_ok()) << validate().to_string();
}

TEST_F(ValidateGroup, LutSizes) {
  g_.luts.push_back(0);
  expect_error(validate(), ErrorCode::kBadLut, "not a whole number of 256-byte rows");
  g_.luts.resize(256);
  expect_error(validate(), ErrorCode::kBadLut, "luts has 1 rows, expected 2..18");
  g_.luts.assign(19 * 256, 0);
  expect_error(validate(), ErrorCode::kBadLut, "luts has 19 rows, expected 2..18");
}

TEST_F(ValidateGroup, OutputPositionsNotStartingAtZero) {
  set_op(0, 1);
  const Status s = validate();
  EXPECT_EQ(s.code(), ErrorCode::kBadOutputPositions);
  EXPECT_EQ(s.message(), "g: output_positions[0] = 1, must be 0");
}

TEST_F(ValidateGroup, OutputPositionsDecreasing) {
  set_op(3, op(2) - 1);
  expect_error(validate(), ErrorCode::kBadOutputPositions,
               "output_positions[2] = " + std::to_string(op(2)) +
                   ", output_positions[3] = " + std::to_string(op(2) - 1) + ": decreasing");
}

TEST_F(ValidateGroup, OutputPositionsEndNotN) {
  set_op(5, op(5) - 1);
  expect_error(validate(), ErrorCode::kBadOutputPositions,
               "output_positions[5] = 9999, must equal n_elements = 10000");
}

TEST_F(ValidateGroup, EmptyBlockBeforeTheLast) {
  set_op(1, 0);
  expect_error(validate(), ErrorCode::kBadOutputPositions,
               "block 0 holds no code start, but only the last block may be empty");
}

TEST_F(ValidateGroup, OutputPositionsSize) {
  g_.output_positions.resize(4 * 7);
  expect_error(validate(), ErrorCode::kBadGroup,
               "output_positions has 28 bytes, expected 4 * (n_blocks + 1) = 24");
}

TEST_F(ValidateGroup, GapsSize) {
  g_.gaps.pop_back();
  expect_error(validate(), ErrorCode::kBadGroup,
               "gaps has 1599 bytes, expected ceil(5 * 512 * n_blocks / 8) = 1600");
  g_.gaps.resize(1601);
  EXPECT_EQ(validate().code(), ErrorCode::kBadGroup);
}

TEST_F(ValidateGroup, MoreWeightsThanStreamBits) {
  g_.encoded_exponent.resize(1249);  // 9992 bits < 10000 weights
  g_.output_positions.resize(8);
  g_.gaps.resize(gap_bytes_for_blocks(1));
  expect_error(validate(), ErrorCode::kBadGroup,
               "encoded_exponent has 1249 bytes, too few for 10000 weights");
}

TEST_F(ValidateGroup, EmptyGroup) {
  g_.sign_mantissa.clear();
  expect_error(validate(), ErrorCode::kBadGroup, "sign_mantissa is empty");
}

TEST_F(ValidateGroup, SplitPositions) {
  auto set_splits = [&](std::vector<int64_t> splits) {
    g_.split_positions.assign(8 * splits.size(), 0);
    for (size_t i = 0; i < splits.size(); ++i) {
      store_le64(g_.split_positions.data() + 8 * i, static_cast<uint64_t>(splits[i]));
    }
  };
  set_splits({1, 5000, 9999});
  EXPECT_TRUE(validate().is_ok()) << validate().to_string();
  set_splits({5000, 5000});
  expect_error(validate(), ErrorCode::kBadGroup,
               "split_positions[1] = 5000, must be > split_positions[0] = 5000 and < n_elements "
               "= 10000");
  set_splits({6000, 5000});
  EXPECT_EQ(validate().code(), ErrorCode::kBadGroup);
  set_splits({0});
  expect_error(validate(), ErrorCode::kBadGroup, "split_positions[0] = 0, must be > 0");
  set_splits({-3});
  EXPECT_EQ(validate().code(), ErrorCode::kBadGroup);
  set_splits({10000});
  EXPECT_EQ(validate().code(), ErrorCode::kBadGroup);
  g_.split_positions.assign(12, 0);
  expect_error(validate(), ErrorCode::kBadGroup, "not a whole number of int64 values");
}

// A block cannot hold more weights than it has bits: 40000 weights in block 0 of a 2-block
// stream (8192 bytes: 65536 bits, enough for 40000 weights in total).
TEST(ValidateGroupBlocks, BlockWithMoreWeightsThanBits) {
  GroupBuffers g;
  test::CodeLengths len{};
  len[127] = 1;
  len[128] = 1;
  g.luts = test::hand_luts(test::canonical_code(len));
  g.encoded_exponent.assign(8192, 0);
  g.sign_mantissa.assign(40000, 0);
  g.gaps.assign(gap_bytes_for_blocks(2), 0);
  g.output_positions.assign(12, 0);
  test::write_output_position(g.output_positions, 1, 40000);
  test::write_output_position(g.output_positions, 2, 40000);
  const Status s = validate_group(g.view(), "g").status();
  EXPECT_EQ(s.code(), ErrorCode::kBadOutputPositions);
  EXPECT_EQ(s.message(),
            "g: output_positions[0] = 0, output_positions[1] = 40000: block 0 would hold 40000 "
            "weights, more than its 32768 bits (a code is at least 1 bit)");
  // 32768 and 7232 is within the limits (stream content is not validate_group's business).
  test::write_output_position(g.output_positions, 1, 32768);
  EXPECT_TRUE(validate_group(g.view(), "g").is_ok());
}

}  // namespace
}  // namespace df11
