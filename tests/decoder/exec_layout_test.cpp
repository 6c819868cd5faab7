// The execution layout on the CPU (spec/EXEC_LAYOUT.md): geometry, the reference encoder and
// decoder, round trips of every BF16 pattern, the worked example, and each invalid blob with
// the error it must give.
#include "df11/exec_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "df11/exec_decode.h"
#include "df11/exec_encode.h"
#include "df11/group.h"
#include "exec_rejected.h"
#include "gaussian_bf16.h"

namespace df11 {
namespace {

std::vector<uint16_t> round_trip(const std::vector<uint16_t>& w, uint32_t rows, uint32_t cols) {
  Result<std::vector<uint8_t>> blob = encode_exec_matrix(w, rows, cols, "m");
  EXPECT_TRUE(blob.is_ok()) << blob.status().to_string();
  if (!blob.is_ok()) return {};
  std::vector<uint16_t> back(w.size(), 0xDEAD);
  const Status s = decode_exec_matrix(*blob, back, "m");
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return back;
}

TEST(ExecLayout, PairWordPutsTheExponentsInBytesOneAndThree) {
  // spec 2.4: P = rotl32(w1 << 16 | w0, 1).
  const uint16_t w0 = 0xBF80, w1 = 0x4049;  // -1.0 (exponent 127), 3.140625 (exponent 128)
  const uint32_t p = exec_pair_word(w0, w1);
  EXPECT_EQ((p >> 8) & 0xFF, 127u);
  EXPECT_EQ(p >> 24, 128u);
  EXPECT_EQ(exec_unpair_word(p), uint32_t{w1} << 16 | w0);
}

TEST(ExecLayout, GeometryOfLlamaShapesStaysUnder12Point01Bits) {
  const uint32_t shapes[7][2] = {{4096, 4096},  {1024, 4096},  {1024, 4096}, {4096, 4096},
                                 {14336, 4096}, {14336, 4096}, {4096, 14336}};
  uint64_t bytes = 0, weights = 0;
  for (const auto& s : shapes) {
    Result<ExecGeometry> g = exec_geometry(s[0], s[1], "m");
    ASSERT_TRUE(g.is_ok());
    // Gaussian weights have ~2e-4 exceptions per weight (decoder/cuda/EXEC_KERNEL.md).
    bytes += g->total_bytes(uint64_t{s[0]} * s[1] / 4000);
    weights += uint64_t{s[0]} * s[1];
  }
  EXPECT_EQ(weights, 218103808u);
  EXPECT_LT(8.0 * static_cast<double>(bytes) / static_cast<double>(weights), 12.01);
}

TEST(ExecLayout, GeometryRejectsShapesOutsideTheLimits) {
  EXPECT_EQ(exec_geometry(0, 5, "m").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(exec_geometry(5, kExecMaxDim + 1, "m").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(exec_geometry(kExecMaxDim, kExecMaxDim, "m").status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(exec_geometry(1, 1, "m").is_ok());
}

TEST(ExecLayout, WorkedExampleBytes) {
  // spec 5: the 1 x 3 matrix [1.0, -2.0, 0.5].
  const std::vector<uint16_t> w = {0x3F80, 0xC000, 0x3F00};
  Result<std::vector<uint8_t>> blob = encode_exec_matrix(w, 1, 3, "example");
  ASSERT_TRUE(blob.is_ok());
  const std::vector<uint8_t>& b = *blob;
  ASSERT_EQ(b.size(), 848u);
  const std::vector<uint8_t> header = {0x44, 0x46, 0x58, 0x31, 1, 0, 64, 0, 1, 0, 0, 0,    3,
                                       0,    0,    0,    114,  4, 0, 0,  0, 0, 0, 0, 0x50, 0x03};
  EXPECT_TRUE(std::equal(header.begin(), header.end(), b.begin()));
  EXPECT_TRUE(std::all_of(b.begin() + 26, b.begin() + 80, [](uint8_t v) { return v == 0; }));
  const std::vector<uint8_t> lane0_bytes = {0x01, 0x00, 0x00, 0x00};
  EXPECT_TRUE(std::equal(lane0_bytes.begin(), lane0_bytes.end(), b.begin() + 80));
  const std::vector<uint8_t> lane0_codes = {0x0D, 0x0E, 0x0C, 0x00};
  EXPECT_TRUE(std::equal(lane0_codes.begin(), lane0_codes.end(), b.begin() + 592));
  EXPECT_EQ(std::count(b.begin() + 84, b.begin() + 592, 0), 508);
  EXPECT_EQ(std::count(b.begin() + 596, b.end(), 0), 848 - 596);
  std::vector<uint16_t> back(3);
  ASSERT_TRUE(decode_exec_matrix(b, back, "example").is_ok());
  EXPECT_EQ(back, w);
}

TEST(ExecLayout, RaggedShapesRoundTrip) {
  const uint32_t shapes[][2] = {{1, 1},    {1, 2},    {2, 1},    {15, 31}, {16, 32},   {17, 33},
                                {16, 257}, {33, 255}, {3, 1000}, {100, 7}, {64, 4096}, {31, 2049}};
  uint32_t seed = 1;
  for (const auto& s : shapes) {
    const std::vector<uint16_t> w = gaussian_bf16(uint64_t{s[0]} * s[1], 0.02f, seed++);
    EXPECT_EQ(round_trip(w, s[0], s[1]), w) << s[0] << " x " << s[1];
  }
}

TEST(ExecLayout, EveryBf16PatternRoundTrips) {
  // All 65536 patterns (NaN payloads, +-0, +-Inf, subnormals) in a 256 x 256 matrix, and the
  // same shuffled into a ragged 255 x 257 + 1 shape's worth of rows.
  std::vector<uint16_t> w(65536);
  for (uint32_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint16_t>(i);
  EXPECT_EQ(round_trip(w, 256, 256), w);
  std::shuffle(w.begin(), w.end(), std::mt19937(7));
  EXPECT_EQ(round_trip(w, 128, 512), w);
  std::vector<uint16_t> ragged(w.begin(), w.begin() + 255 * 257);
  EXPECT_EQ(round_trip(ragged, 255, 257), ragged);
}

TEST(ExecLayout, EveryWeightAnException) {
  // Two exponents 120 apart: whatever the base, one of them is outside the window, and at
  // 50/50 the tie goes to the smallest base, so every weight of the other one is an exception.
  std::vector<uint16_t> w(40 * 70);
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] =
        static_cast<uint16_t>((i % 2 ? 0x7F80u : 0x0000u) | (i * 37 % 128) | (i % 3 ? 0x8000 : 0));
  }
  // Exponent 255 (Inf, NaN payloads) and 0 (zeros, subnormals).
  Result<std::vector<uint8_t>> blob = encode_exec_matrix(w, 40, 70, "m");
  ASSERT_TRUE(blob.is_ok());
  const ExecHeader h = *read_exec_header(*blob, "m");
  EXPECT_EQ(h.base, 0u);
  EXPECT_EQ(h.n_exceptions, w.size() / 2);
  EXPECT_EQ(round_trip(w, 40, 70), w);
  // A matrix of exponent 255 alone: base 240 is the highest, 255 stays an exception.
  std::vector<uint16_t> inf(16 * 32, 0xFFC1);
  blob = encode_exec_matrix(inf, 16, 32, "m");
  ASSERT_TRUE(blob.is_ok());
  EXPECT_EQ(read_exec_header(*blob, "m")->n_exceptions, inf.size());
  EXPECT_EQ(round_trip(inf, 16, 32), inf);
}

TEST(ExecLayout, EncodingIsDeterministic) {
  const std::vector<uint16_t> w = gaussian_bf16(48 * 300, 0.05f, 3);
  const auto a = encode_exec_matrix(w, 48, 300, "m");
  const auto b = encode_exec_matrix(w, 48, 300, "m");
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(*a, *b);
}

TEST(ExecLayout, BaseIsTheFullestWindowSmallestOnATie) {
  std::array<uint64_t, 256> h{};
  EXPECT_EQ(choose_exec_base(h), 0u);  // all empty: a tie everywhere
  h[130] = 5;
  EXPECT_EQ(choose_exec_base(h), 116u);  // every base in 116..130 holds it
  h[100] = 6;
  EXPECT_EQ(choose_exec_base(h), 86u);
  h[250] = 100;
  EXPECT_EQ(choose_exec_base(h), 236u);
  h[255] = 1000;  // never in a window: base + 14 <= 254
  EXPECT_EQ(choose_exec_base(h), 236u);
}

// Invalid blobs (spec 3): each rule with the error it gives.
class ExecInvalid : public ::testing::Test {
 protected:
  void SetUp() override {
    w_ = gaussian_bf16(20 * 40, 0.02f, 9);
    w_[3] = 0x7FC1;   // a NaN: an exception
    w_[45] = 0x0001;  // a subnormal: an exception
    blob_ = *encode_exec_matrix(w_, 20, 40, "m");
    g_ = *exec_geometry(20, 40, "m");
    ASSERT_TRUE(validate_exec_matrix(blob_, "m").is_ok());
    ASSERT_EQ(read_exec_header(blob_, "m")->n_exceptions, 2u);
  }
  void expect(const std::vector<uint8_t>& b, ErrorCode code, const std::string& part) {
    expect_rejected(
        [](auto blob, const std::string& what) { return validate_exec_matrix(blob, what); },
        [](auto blob, auto out, const std::string& what) {
          return decode_exec_matrix(blob, out, what);
        },
        b, w_.size(), code, part);
  }

  std::vector<uint16_t> w_;
  std::vector<uint8_t> blob_;
  ExecGeometry g_;
};

TEST_F(ExecInvalid, HeaderRules) {
  // Each case: one edit of the valid blob, the message part it must give.
  struct Edit {
    uint32_t at;
    uint32_t value;  // a byte, or a u32 where `u32`
    bool u32;
    const char* part;
  };
  const Edit edits[] = {
      {0, 'X', false, "magic"},      {4, 2, false, "version 2"},
      {17, 3, false, "code bits"},   {40, 1, false, "reserved"},
      {8, 0, true, "limits"},        {16, 241, false, "Max_Base"},
      {20, 40, true, "total_bytes"}, {20, 20 * 40 + 1, true, "exceptions for 800 weights"}};
  for (const Edit& e : edits) {
    auto b = blob_;
    if (e.u32) {
      store_le32(b.data() + e.at, e.value);
    } else {
      b[e.at] = static_cast<uint8_t>(e.value);
    }
    expect(b, ErrorCode::kBadGroup, e.part);
  }
  auto b = blob_;
  b.resize(b.size() - 1);
  expect(b, ErrorCode::kTruncated, "the header says");
  b.resize(10);
  expect(b, ErrorCode::kTruncated, "shorter than the 64-byte header");
}

TEST_F(ExecInvalid, BodyRules) {
  auto b = blob_;
  b[g_.byte_plane - 1] = 1;  // alignment padding after the tile offsets
  expect(b, ErrorCode::kBadGroup, "padding byte between");
  b = blob_;
  b.back() = 1;  // padding after the exceptions
  expect(b, ErrorCode::kBadGroup, "padding byte between");
  b = blob_;
  store_le32(b.data() + g_.tile_offsets + 4, 1);  // tile 0 holds both exceptions
  expect(b, ErrorCode::kBadGroup, "code-15");
  b = blob_;
  b[g_.exceptions] = static_cast<uint8_t>(read_exec_header(blob_, "m")->base + 3);
  expect(b, ErrorCode::kBadGroup, "inside the window");
  // A padding weight (row 19's column 40.. do not exist: columns 40..63 of step 1) coded 15.
  b = blob_;
  const ExecSlot pad = exec_slot(g_.steps, 0, 45);
  b[g_.code_plane + pad.code_byte] |= static_cast<uint8_t>(0xF << (4 * pad.nibble));
  expect(b, ErrorCode::kBadGroup, "code is not 0");
  b = blob_;
  b[g_.byte_plane + exec_slot(g_.steps, 19, 60).byte] = 4;
  expect(b, ErrorCode::kBadGroup, "padding byte is not canonical");
  // Row 20.. are padding rows of strip 1.
  b = blob_;
  b[g_.byte_plane + exec_slot(g_.steps, 25, 3).byte] = 1;
  expect(b, ErrorCode::kBadGroup, "padding byte is not canonical");
}

TEST_F(ExecInvalid, DecodeChecksTheOutputSize) {
  std::vector<uint16_t> out(w_.size() - 1);
  EXPECT_EQ(decode_exec_matrix(blob_, out, "m").code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace df11
