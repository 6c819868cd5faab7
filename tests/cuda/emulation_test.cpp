// The CUDA kernel's algorithm run on the host (decode_group_emulated): runs everywhere,
// GPU or not, so CI checks the kernel's windows, prefix sums, checks and staging logic.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_emulation.h"
#include "cuda_test_cases.h"
#include "decoder_test_groups.h"
#include "df11/decoder.h"

namespace df11 {
namespace {

using cuda_test::Case;

TEST(CudaEmulation, DecodesEveryCaseBitExact) {
  for (const Case& c : cuda_test::all_cases(/*large=*/false)) {
    SCOPED_TRACE(c.name);
    std::vector<uint16_t> out(c.weights.size(), 0xDEAD);
    const Status s = cuda::decode_group_emulated(c.group.view(), out, c.name);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_TRUE(out == c.weights);
  }
}

// Whatever a corruption does, the emulation agrees with the reference decoder (which checks
// every gap and the stream's end) on whether the group decodes, and on the output if it does.
TEST(CudaEmulation, AgreesWithReferenceOnCorruptStreams) {
  int failures_seen = 0;
  int trials = 0;
  for (const Case& c : cuda_test::all_cases(/*large=*/false)) {
    if (c.weights.size() > 200000) continue;  // keep the emulation quick
    for (const auto& corruption : cuda_test::stream_corruptions()) {
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        SCOPED_TRACE(c.name + " / " + corruption.name + " / seed " + std::to_string(seed));
        GroupBuffers g = c.group;
        testing::TestRng rng(seed * 7919 + c.weights.size());
        corruption.apply(g, rng);
        if (!validate_group(g.view(), "g").is_ok()) continue;
        ++trials;
        std::vector<uint16_t> want(c.weights.size(), 0xBEEF), got(c.weights.size(), 0xBEEF);
        const Status ref = decode_group_reference(g.view(), want, "g");
        const Status emu = cuda::decode_group_emulated(g.view(), got, "g");
        ASSERT_EQ(ref.is_ok(), emu.is_ok())
            << "reference: " << ref.to_string() << "\nemulation: " << emu.to_string();
        if (ref.is_ok()) {
          ASSERT_TRUE(got == want);
        } else {
          ++failures_seen;
        }
      }
    }
  }
  EXPECT_GT(trials, 100);
  EXPECT_GT(failures_seen, trials / 2);  // most corruptions are detected, as they must be
}

// Targeted corruptions give the same error code as the reference decoder.
TEST(CudaEmulation, ErrorCodesOfTargetedCorruptions) {
  const auto symbols = cuda_test::exponent_range(100, 30);
  const auto code = test::canonical_code(test::unary_lengths(symbols));
  const auto weights = cuda_test::uniform_over(symbols, 9000, 10);
  const GroupBuffers good = test::hand_encode(code, weights);
  ASSERT_GE(good.view().n_blocks(), 3u);
  std::vector<uint16_t> out(weights.size());
  auto expect_code = [&](const GroupBuffers& g, ErrorCode want, const std::string& why) {
    SCOPED_TRACE(why);
    std::vector<uint16_t> ref_out(weights.size());
    EXPECT_EQ(decode_group_reference(g.view(), ref_out, "g").code(), want);
    const Status s = cuda::decode_group_emulated(g.view(), out, "g");
    EXPECT_EQ(s.code(), want) << s.to_string();
  };

  GroupBuffers g = good;
  test::write_gap(g.gaps, 0, 3);
  expect_code(g, ErrorCode::kBadGap, "first gap not 0");

  g = good;
  test::write_gap(g.gaps, 300, (read_gap(good.gaps, 300) + 1) % 32);
  expect_code(g, ErrorCode::kBadGap, "interior gap");

  g = good;
  test::write_gap(g.gaps, 512, (read_gap(good.gaps, 512) + 1) % 32);
  expect_code(g, ErrorCode::kBadGap, "first gap of block 1");

  g = good;
  test::write_output_position(g.output_positions, 1, read_output_position(good.view(), 1) + 1);
  expect_code(g, ErrorCode::kBadOutputPositions, "weight moved to block 0");

  g = good;
  test::write_output_position(g.output_positions, 1, read_output_position(good.view(), 1) - 1);
  expect_code(g, ErrorCode::kBadOutputPositions, "weight moved to block 1");

  g = good;
  g.encoded_exponent.push_back(0);  // one more byte: the last code no longer ends in it
  expect_code(g, ErrorCode::kCorruptData, "stream one byte longer");
}

TEST(CudaEmulation, UnusableEntryReachedByARealCode) {
  test::CodeLengths len{};
  len[127] = 1;
  std::vector<uint16_t> weights(1000);
  testing::TestRng rng(2);
  for (auto& w : weights) w = static_cast<uint16_t>((rng.next() & 0x807F) | (127u << 7));
  GroupBuffers g = test::hand_encode(test::canonical_code(len), weights);
  std::vector<uint16_t> out(weights.size());
  ASSERT_TRUE(cuda::decode_group_emulated(g.view(), out, "g").is_ok());
  ASSERT_TRUE(out == weights);
  for (uint64_t byte : {uint64_t{5}, g.encoded_exponent.size() - 2}) {
    GroupBuffers bad = g;
    bad.encoded_exponent[byte] |= 0x10;  // a "1" bit: root entries 128..255 are unusable
    const Status s = cuda::decode_group_emulated(bad.view(), out, "g");
    EXPECT_EQ(s.code(), ErrorCode::kCorruptData) << s.to_string();
  }
}

TEST(CudaEmulation, RejectsWrongOutputSize) {
  const Case c = cuda_test::encoded("small", {testing::gaussian_bf16(100, 0.01, 1)});
  std::vector<uint16_t> out(99);
  EXPECT_EQ(cuda::decode_group_emulated(c.group.view(), out, "g").code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace df11
