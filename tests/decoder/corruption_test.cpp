// Single-bit corruption of a valid group: neither decoder may crash or read out of bounds
// (run under ASan/UBSan), both report the same error, and a flip is either detected, or
// harmless exactly when it hits a bit no valid reading depends on (padding, gaps of windows
// without a code start), or else changes the decoded weights (e.g. a code turned into its
// sibling of the same length: only the checksums catch that).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "df11/decoder.h"
#include "df11/encoder.h"
#include "encoder_test_data.h"
#include "fast_table.h"

namespace df11 {
namespace {

enum class Outcome { kDetected, kHarmless, kChanged };

// Realistic weights: 14,000 (2 blocks of stream) decode with the fast decoder's root table
// alone, 70,000 (11 blocks) with its multi-code table (decoder/src/fast_table.h).
constexpr uint64_t kRootTableSize = 14000;
constexpr uint64_t kMultiTableSize = 70000;

class Corruption : public ::testing::TestWithParam<uint64_t> {
 protected:
  void SetUp() override {
    weights_ =
        std::make_unique<std::vector<uint16_t>>(testing::gaussian_bf16(GetParam(), 0.02, 21, 1e-3));
    std::span<const uint16_t> m(*weights_);
    Result<GroupBuffers> g = encode_group(std::span<const std::span<const uint16_t>>(&m, 1));
    ASSERT_TRUE(g.is_ok());
    good_ = std::make_unique<GroupBuffers>(std::move(g).value());
    ASSERT_GE(good_->view().n_blocks(), 2u);
    // The size picks the fast decoder's path.
    const Result<GroupInfo> info = validate_group(good_->view(), "g");
    ASSERT_TRUE(info.is_ok());
    ASSERT_EQ(detail::make_fast_table(good_->view(), info.value()).multi.empty(),
              GetParam() == kRootTableSize);
  }

  // Decodes `g` with both decoders; they must agree on the error or on the output.
  Outcome decode_both(const GroupBuffers& g) {
    std::vector<uint16_t> ref(weights_->size()), fast(weights_->size());
    const Status r = decode_group_reference(g.view(), ref, "g");
    const Status f = decode_group(g.view(), fast, "g");
    EXPECT_EQ(f.to_string(), r.to_string());
    if (!r.is_ok()) {
      last_error_ = r.code();
      return Outcome::kDetected;
    }
    EXPECT_TRUE(fast == ref);
    return ref == *weights_ ? Outcome::kHarmless : Outcome::kChanged;
  }

  std::unique_ptr<std::vector<uint16_t>> weights_;
  std::unique_ptr<GroupBuffers> good_;
  ErrorCode last_error_ = ErrorCode::kOk;
};

INSTANTIATE_TEST_SUITE_P(BothTables, Corruption, ::testing::Values(kRootTableSize, kMultiTableSize),
                         [](const ::testing::TestParamInfo<uint64_t>& p) {
                           return p.param == kRootTableSize ? "RootTable" : "MultiCodeTable";
                         });

void flip(std::vector<uint8_t>& bytes, uint64_t bit) {
  bytes[bit / 8] ^= static_cast<uint8_t>(0x80u >> (bit % 8));
}

TEST_P(Corruption, StreamBitFlips) {
  uint64_t n_bits = 0;  // coded bits; the rest of the last byte is padding
  {
    GroupPlan plan;
    std::span<const uint16_t> m(*weights_);
    ASSERT_TRUE(encode_group(std::span<const std::span<const uint16_t>>(&m, 1), &plan).is_ok());
    n_bits = plan.n_bits;
  }
  const uint64_t total = 8 * good_->encoded_exponent.size();
  ASSERT_LT(n_bits, total);  // this input leaves padding bits to test
  std::mt19937_64 rng(5);
  uint64_t detected = 0, changed = 0, tried = 0;
  // The larger group decodes 5x slower: fewer random flips keep the suite fast under ASan.
  const int flips = GetParam() == kRootTableSize ? 3000 : 1000;
  for (int k = 0; k < flips; ++k) {
    // Every padding bit, the bits around the block boundary, then random bits.
    uint64_t bit = k < 8 ? total - 1 - k : k < 200 ? 32768 - 96 + k : rng() % total;
    if (bit >= total) continue;
    GroupBuffers g = *good_;
    flip(g.encoded_exponent, bit);
    const Outcome o = decode_both(g);
    ++tried;
    if (bit >= n_bits) {
      EXPECT_EQ(o, Outcome::kHarmless) << "padding bit " << bit;
      continue;
    }
    // A coded bit changes the bit string, so an accepted stream decodes differently.
    EXPECT_NE(o, Outcome::kHarmless) << "coded bit " << bit;
    detected += o == Outcome::kDetected;
    changed += o == Outcome::kChanged;
  }
  // Not a pass/fail figure: most undetected flips turn a code into its canonical sibling
  // (same length, so every boundary stays put). The members' xxh3 checksums catch those.
  std::printf("stream flips: %llu tried, %llu detected, %llu decoded to other weights\n",
              static_cast<unsigned long long>(tried), static_cast<unsigned long long>(detected),
              static_cast<unsigned long long>(changed));
  EXPECT_GT(detected, 0u);
}

// A gap field is checked exactly when its window holds a code start (spec 3.5).
TEST_P(Corruption, GapBitFlips) {
  const uint64_t last_start_window = (8 * good_->encoded_exponent.size() - 1) / 64;
  const uint64_t n_windows = good_->view().n_windows();
  const uint64_t stride = GetParam() == kRootTableSize ? 7 : 31;
  for (uint64_t w = 0; w < n_windows; w += (w < last_start_window - 40 ? stride : 1)) {
    for (uint32_t b = 0; b < kGapBits; ++b) {
      GroupBuffers g = *good_;
      flip(g.gaps, w * kGapBits + b);
      const Outcome o = decode_both(g);
      // The window holding the last code start is at or before the last stream bit's.
      if (w < last_start_window) {
        EXPECT_EQ(o, Outcome::kDetected) << "window " << w;
        EXPECT_EQ(last_error_, ErrorCode::kBadGap) << "window " << w;
      } else if (w > last_start_window) {
        EXPECT_EQ(o, Outcome::kHarmless) << "window " << w;
      }
    }
  }
}

// Output positions are fully determined by the stream: every flip is found.
TEST_P(Corruption, OutputPositionBitFlips) {
  for (uint64_t bit = 0; bit < 8 * good_->output_positions.size(); ++bit) {
    GroupBuffers g = *good_;
    flip(g.output_positions, bit);
    EXPECT_EQ(decode_both(g), Outcome::kDetected) << "bit " << bit;
    EXPECT_EQ(last_error_, ErrorCode::kBadOutputPositions) << "bit " << bit;
  }
}

// Any single LUT byte changed: no crash, same verdict from both decoders (validation may
// reject it, a changed entry may or may not be reached).
TEST_P(Corruption, LutByteChanges) {
  std::mt19937_64 rng(3);
  for (int k = 0; k < 400; ++k) {
    GroupBuffers g = *good_;
    g.luts[rng() % g.luts.size()] = static_cast<uint8_t>(rng());
    decode_both(g);
  }
}

// A root-row entry changed to another code's exponent inside a code's run of indices: the
// table still validates, but a code's exponent now depends on the bits after it. The fast
// decoder must then read the table as the reference decoder does (one code per lookup, all
// 8 index bits), not as its multi-code table would (the bits after a window taken as zero).
TEST_P(Corruption, CodeRunsThatAreNotUniformDecodeAsTheReferenceDoes) {
  const Result<GroupInfo> info = validate_group(good_->view(), "g");
  ASSERT_TRUE(info.is_ok());
  const uint8_t* lengths = good_->luts.data() + (info.value().n_luts - 1) * kLutRowSize;
  const auto code_len = [&](uint32_t entry) {
    return entry < kFirstPointerEntry ? lengths[entry] : 0u;
  };
  // The longest run of a code of 2..7 bits, and another root code.
  uint32_t run_start = 0, run = 0, other = 0;
  for (uint32_t i = 0; i < kLutRowSize; ++i) {
    const uint32_t len = code_len(good_->luts[i]);
    if (len >= 2 && len <= 7 && (1u << (8 - len)) > run) {
      run = 1u << (8 - len);
      run_start = i & ~(run - 1);
    }
  }
  ASSERT_GE(run, 2u);
  for (uint32_t i = 0; i < kLutRowSize; ++i) {
    const uint32_t len = code_len(good_->luts[i]);
    if (len >= 1 && len <= 8 && good_->luts[i] != good_->luts[run_start]) other = i;
  }
  uint64_t changed = 0;
  for (uint32_t k = 1; k < run; ++k) {
    GroupBuffers g = *good_;
    g.luts[run_start + k] = g.luts[other];
    const Result<GroupInfo> bad = validate_group(g.view(), "g");
    ASSERT_TRUE(bad.is_ok());
    EXPECT_TRUE(detail::make_fast_table(g.view(), bad.value()).multi.empty());
    changed += decode_both(g) != Outcome::kHarmless;
  }
  EXPECT_GT(changed, 0u);  // the changed entries are read
}

}  // namespace
}  // namespace df11
