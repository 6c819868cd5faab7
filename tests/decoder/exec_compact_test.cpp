// The compact execution layout on the CPU (spec/EXEC_COMPACT.md): the code, the reference
// encoder and decoder, round trips of every BF16 pattern and of ragged shapes, its size on
// Gaussian weights, the worked example, and each invalid blob with the error it must give.
#include "df11/exec_compact.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "df11/exec_compact_encode.h"
#include "df11/exec_decode.h"
#include "df11/group.h"
#include "exec_rejected.h"
#include "gaussian_bf16.h"

namespace df11 {
namespace {

std::vector<uint8_t> encode(const std::vector<uint16_t>& w, uint32_t rows, uint32_t cols) {
  Result<std::vector<uint8_t>> blob = encode_compact_matrix(w, rows, cols, "m");
  EXPECT_TRUE(blob.is_ok()) << blob.status().to_string();
  return blob.is_ok() ? *blob : std::vector<uint8_t>{};
}

// Encodes, validates, decodes and re-encodes with the blob's own lengths: every weight back
// bit for bit, the same bytes again.
void expect_round_trip(const std::vector<uint16_t>& w, uint32_t rows, uint32_t cols) {
  const std::vector<uint8_t> blob = encode(w, rows, cols);
  ASSERT_FALSE(blob.empty());
  ASSERT_TRUE(validate_compact_matrix(blob, "m").is_ok());
  std::vector<uint16_t> back(w.size(), 0xDEAD);
  const Status s = decode_compact_matrix(blob, back, "m");
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(back, w) << rows << " x " << cols;
  const CompactGeometry g = *compact_geometry(rows, cols, "m");
  const auto again = encode_compact_matrix_with_lengths(
      back, rows, cols, std::span<const uint8_t, kCompactSymbols>(blob.data() + g.lengths, 256),
      "m");
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(*again, blob);
}

TEST(ExecCompact, CanonicalCodeAndItsTable) {
  // spec 2.3: lengths 1, 2, 3, 3 for exponents 10, 20, 30, 40: codewords 0, 10, 110, 111,
  // written first bit first (stream order: bit 0 is the codeword's first bit).
  std::array<uint8_t, 256> lengths{};
  lengths[10] = 1;
  lengths[20] = 2;
  lengths[30] = 3;
  lengths[40] = 3;
  const Result<CompactCode> c = compact_code(lengths, "m");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->bits[10], 0b0u);
  EXPECT_EQ(c->bits[20], 0b01u);
  EXPECT_EQ(c->bits[30], 0b011u);
  EXPECT_EQ(c->bits[40], 0b111u);
  for (uint32_t i = 0; i < 4096; ++i) {
    const uint32_t e = (i & 1) == 0 ? 10 : (i & 2) == 0 ? 20 : (i & 4) == 0 ? 30 : 40;
    EXPECT_EQ(c->table[i] & 0xFF, e) << i;
    EXPECT_EQ(c->table[i] >> 8, lengths[e]) << i;
  }
  // An incomplete code leaves table entries without a code (0).
  lengths[40] = 0;
  EXPECT_EQ(compact_code(lengths, "m")->table[0b111], 0u);
  // C1.
  lengths[40] = 13;
  EXPECT_EQ(compact_code(lengths, "m").status().code(), ErrorCode::kBadGroup);
  lengths[40] = 2;
  EXPECT_NE(compact_code(lengths, "m").status().message().find("Kraft"), std::string::npos);
  EXPECT_NE(compact_code(std::array<uint8_t, 256>{}, "m").status().message().find("no exponent"),
            std::string::npos);
}

TEST(ExecCompact, LengthsAreOptimalWithinTwelveBits) {
  std::array<uint64_t, 256> counts{};
  counts[120] = 1000;
  EXPECT_EQ((*choose_compact_lengths(counts))[120], 1u);  // a lone exponent: one bit
  counts[121] = 1000;
  counts[122] = 500;
  const auto l = *choose_compact_lengths(counts);
  EXPECT_EQ(l[120] + l[121] + l[122], 5);  // 1, 2 and 2 bits
  EXPECT_EQ(l[0], 0);
  // Counts 2^0 .. 2^30 (Huffman's code: up to 30 bits) held to 12 bits, a complete code.
  counts.fill(0);
  for (uint32_t e = 0; e <= 30; ++e) counts[e] = uint64_t{1} << e;
  const auto g = *choose_compact_lengths(counts);
  EXPECT_EQ(*std::max_element(g.begin(), g.end()), 12);
  uint32_t kraft = 0;
  for (const uint8_t x : g) kraft += x ? 1u << (12 - x) : 0;
  EXPECT_EQ(kraft, 4096u);  // a complete code
  EXPECT_EQ(g[30], 1u);
  counts.fill(7);  // every exponent: 8 bits each
  const auto all = choose_compact_lengths(counts);
  ASSERT_TRUE(all.is_ok());
  for (const uint8_t x : *all) EXPECT_EQ(x, 8);
  EXPECT_EQ(choose_compact_lengths(std::array<uint64_t, 256>{}).status().code(),
            ErrorCode::kInvalidArgument);
  // Counts up to 2^64 - 1 (a caller's, through df11_tools_compact_lengths): their sum does not
  // wrap and none scales down to 0; every present exponent keeps a codeword.
  counts.fill(0);
  counts[3] = counts[4] = UINT64_MAX;
  counts[5] = 1;
  counts[6] = uint64_t{1} << 63;
  const auto big = choose_compact_lengths(counts);
  ASSERT_TRUE(big.is_ok()) << big.status().message();
  kraft = 0;
  for (size_t e = 0; e < 256; ++e) {
    EXPECT_EQ((*big)[e] != 0, counts[e] != 0) << e;
    kraft += (*big)[e] ? 1u << (12 - (*big)[e]) : 0;
  }
  EXPECT_LE(kraft, 4096u);
}

TEST(ExecCompact, GaussianWeightsTakeUnder10Point7Bits) {
  // A 512 x 4096 slice of an 8B block's shape, Gaussian (std 0.02, as bench's 8B block):
  // ~2.6 bits of code per exponent, DF11 itself ~10.8 bits per weight.
  const uint32_t rows = 512, cols = 4096;
  const std::vector<uint16_t> w = gaussian_bf16(size_t{rows} * cols, 0.02f, 3);
  const std::vector<uint8_t> blob = encode(w, rows, cols);
  const double bits = 8.0 * static_cast<double>(blob.size()) / static_cast<double>(w.size());
  EXPECT_LT(bits, 10.7);
  EXPECT_GT(bits, 10.5);
  std::vector<uint16_t> back(w.size());
  ASSERT_TRUE(decode_compact_matrix(blob, back, "m").is_ok());
  EXPECT_EQ(back, w);
}

TEST(ExecCompact, RaggedShapesRoundTrip) {
  const uint32_t shapes[][2] = {{1, 1},   {1, 33},   {3, 5},    {16, 256},
                                {17, 31}, {33, 300}, {40, 520}, {5, 2049}};
  uint32_t seed = 1;
  for (const auto& s : shapes) {
    expect_round_trip(gaussian_bf16(size_t{s[0]} * s[1], 0.02f, seed++), s[0], s[1]);
  }
}

TEST(ExecCompact, EveryBf16PatternRoundTrips) {
  // All 65,536 patterns (NaN payloads, +-0, +-Inf, subnormals): every exponent, 8 bits each.
  std::vector<uint16_t> w(65536);
  for (uint32_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint16_t>(i * 40503u);
  expect_round_trip(w, 256, 256);
  w.resize(257 * 255 - 1);
  w.push_back(0xFFFF);
  expect_round_trip(w, 257, 255);
}

TEST(ExecCompact, LoneExponentAndLanesFarApart) {
  // Every weight 1.0 (exponent 127) and no padding: one code of one bit.
  std::vector<uint16_t> ones(16 * 256, 0x3F80);
  const std::vector<uint8_t> blob = encode(ones, 16, 256);
  const CompactGeometry g = *compact_geometry(16, 256, "m");
  EXPECT_EQ(blob[g.lengths + 127], 1u);
  EXPECT_EQ(read_compact_header(blob, "m")->stream_bits, 16u * 256);
  expect_round_trip(ones, 16, 256);
  // Padding rows: exponent 0 gets a code too.
  expect_round_trip(std::vector<uint16_t>(3 * 256, 0x3F80), 3, 256);
  // Row 0 rare exponents (long codes), the rest 1.0: lanes 0..3 of each step need far more bits
  // than the others, by more than 255, so lane_base is the longest less 255 (spec 4.2).
  std::vector<uint16_t> w(16 * 256, 0x3F80);
  for (uint32_t c = 0; c < 256; ++c) w[c] = static_cast<uint16_t>((c % 200 + 1) << 7 | 5);
  const std::vector<uint8_t> far = encode(w, 16, 256);
  const uint8_t* lt = far.data() + g.lane_tables;
  EXPECT_EQ(lt[2 + 4], 0u);    // a lane of 1.0s, padded up to lane_base
  EXPECT_EQ(lt[2 + 0], 255u);  // the longest lane
  expect_round_trip(w, 16, 256);
}

TEST(ExecCompact, WorkedExampleBytes) {
  // spec 5: the 1 x 3 matrix [1.0, -2.0, 0.5].
  const std::vector<uint16_t> w = {0x3F80, 0xC000, 0x3F00};
  const std::vector<uint8_t> b = encode(w, 1, 3);
  const CompactGeometry g = *compact_geometry(1, 3, "m");
  EXPECT_EQ(g.tile_bits, 320u);
  EXPECT_EQ(g.lane_tables, 336u);
  EXPECT_EQ(g.byte_plane, 384u);
  EXPECT_EQ(g.stream, 896u);
  ASSERT_EQ(b.size(), 976u);
  EXPECT_EQ(load_le64(b.data() + 24), 976u);    // total_bytes: 896 + 8 x (9 + 1)
  EXPECT_EQ(load_le64(b.data() + 32), 517u);    // stream_bits: 21 + 31 x 16
  EXPECT_EQ(load_le32(b.data()), 0x31434644u);  // "DFC1"
  EXPECT_EQ(b[16], 12u);                        // max_code_bits
  EXPECT_EQ(b[g.lengths + 0], 1u);              // 509 padding positions: exponent 0
  EXPECT_EQ(b[g.lengths + 126], 3u);
  EXPECT_EQ(b[g.lengths + 127], 3u);
  EXPECT_EQ(b[g.lengths + 128], 2u);
  EXPECT_EQ(load_le64(b.data() + g.tile_bits + 8), 517u);
  EXPECT_EQ(b[g.lane_tables], 16u);     // lane_base 16: lanes 1..31 code 16 zeros
  EXPECT_EQ(b[g.lane_tables + 2], 5u);  // lane 0: 3 + 2 + 3 + 13 x 1 = 21 bits
  EXPECT_EQ(b[g.byte_plane], 0x01u);
  // Lane 0's codes, first bit first: 127 -> 111, 128 -> 10, 126 -> 110, then 13 zeros.
  EXPECT_EQ(b[g.stream], 0x6Fu);
  EXPECT_EQ(b[g.stream + 1], 0x00u);
  expect_round_trip(w, 1, 3);
}

// Invalid blobs (spec 3): each rule with the error it gives.
class CompactInvalid : public ::testing::Test {
 protected:
  void SetUp() override {
    w_ = gaussian_bf16(20 * 40, 0.02f, 9);
    w_[3] = 0x7FC1;   // a NaN
    w_[45] = 0x0001;  // a subnormal
    blob_ = encode(w_, 20, 40);
    g_ = *compact_geometry(20, 40, "m");
    ASSERT_TRUE(validate_compact_matrix(blob_, "m").is_ok());
  }
  void expect(const std::vector<uint8_t>& b, ErrorCode code, const std::string& part) {
    expect_rejected(
        [](auto blob, const std::string& what) { return validate_compact_matrix(blob, what); },
        [](auto blob, auto out, const std::string& what) {
          return decode_compact_matrix(blob, out, what);
        },
        b, w_.size(), code, part);
  }

  std::vector<uint16_t> w_;
  std::vector<uint8_t> blob_;
  CompactGeometry g_;
};

TEST_F(CompactInvalid, HeaderRules) {
  struct Edit {
    uint32_t at;
    uint64_t value;  // a byte, or a u64 where `u64`
    bool u64;
    const char* part;
  };
  const Edit edits[] = {
      {0, 'X', false, "magic"},        {4, 2, false, "version 2"},
      {16, 7, false, "max_code_bits"}, {20, 1, false, "reserved"},
      {50, 1, false, "reserved"},      {32, uint64_t{1} << 40, true, "at most 12 code bits"},
      {24, 64, true, "total_bytes"}};
  for (const Edit& e : edits) {
    auto b = blob_;
    if (e.u64) {
      store_le64(b.data() + e.at, e.value);
    } else {
      b[e.at] = static_cast<uint8_t>(e.value);
    }
    expect(b, ErrorCode::kBadGroup, e.part);
  }
  auto b = blob_;
  store_le32(b.data() + 8, 0);
  expect(b, ErrorCode::kBadGroup, "limits");
  b = blob_;
  b.resize(b.size() - 1);
  expect(b, ErrorCode::kTruncated, "the header says");
  b.resize(10);
  expect(b, ErrorCode::kTruncated, "shorter than the 64-byte header");
}

TEST_F(CompactInvalid, CodeAndTileRules) {
  auto b = blob_;
  b[g_.lengths + 200] = 13;
  expect(b, ErrorCode::kBadGroup, "more than 12");
  b = blob_;
  for (uint32_t e = 0; e < 256; ++e) b[g_.lengths + e] = 1;
  expect(b, ErrorCode::kBadGroup, "Kraft");
  b = blob_;
  store_le64(b.data() + g_.tile_bits, 1);
  expect(b, ErrorCode::kBadGroup, "do not run from 0");
  b = blob_;
  store_le64(b.data() + g_.tile_bits + 8, load_le64(b.data() + g_.tile_bits + 16) + 1);
  expect(b, ErrorCode::kBadGroup, "not consecutive");
  b = blob_;
  ++b[g_.lane_tables + 2];  // lane 0 of tile 0 one bit longer: the lanes no longer add up
  expect(b, ErrorCode::kBadGroup, "add up");
  // Lane base one less, every delta one more: the same bits per lane, not the encoder's table.
  b = blob_;
  --b[g_.lane_tables];
  for (uint32_t l = 0; l < kExecLanes; ++l) ++b[g_.lane_tables + 2 + l];
  expect(b, ErrorCode::kBadGroup, "lane table is not the encoder's");
}

TEST_F(CompactInvalid, StreamAndPaddingRules) {
  auto b = blob_;
  b[g_.byte_plane - 1] = 1;  // alignment padding after the lane tables
  expect(b, ErrorCode::kBadGroup, "padding byte or bit");
  b = blob_;
  b.back() = 1;  // after the stream
  expect(b, ErrorCode::kBadGroup, "padding byte or bit");
  // An exponent of the matrix without a code: its lanes' bits decode to no code.
  b = blob_;
  const uint32_t e0 = (w_[0] >> 7) & 0xFF;
  b[g_.lengths + e0] = 0;
  expect(b, ErrorCode::kBadGroup, "no code within the lane's bits");
  // The last bit of tile 0's lane 31 (after its codes, or its last code's last bit) set.
  b = blob_;
  const uint64_t end = load_le64(b.data() + g_.tile_bits + 8) - 1;
  b[g_.stream + end / 8] ^= static_cast<uint8_t>(1u << (end % 8));
  const Result<CompactHeader> r = validate_compact_matrix(b, "m");
  EXPECT_EQ(r.status().code(), ErrorCode::kBadGroup);
  // A padding weight (row 0, column 45: step 1 ends at column 63) not +0.
  b = blob_;
  b[g_.byte_plane + exec_slot(g_.exec.steps, 0, 45).byte] = 2;
  expect(b, ErrorCode::kBadGroup, "padding weight is not +0");
}

TEST_F(CompactInvalid, EncoderAndDecoderArguments) {
  std::vector<uint16_t> out(w_.size() - 1);
  EXPECT_EQ(decode_compact_matrix(blob_, out, "m").code(), ErrorCode::kInvalidArgument);
  std::array<uint8_t, 256> lengths{};
  lengths[127] = 1;  // the matrix's other exponents have no code
  const auto r = encode_compact_matrix_with_lengths(w_, 20, 40, lengths, "m");
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("has no code"), std::string::npos);
  EXPECT_EQ(encode_compact_matrix(w_, 20, 41, "m").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(encode_compact_matrix({}, 0, 1, "m").status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace df11
