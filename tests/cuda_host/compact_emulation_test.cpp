// The compact layout's GPU decode (compact_kernel.cu) as its host emulation runs it, lane by
// lane with the kernel's arithmetic (compact_core.h): every weight of the reference encoder's
// blobs back bit for bit, ragged shapes and every BF16 pattern included; corrupt streams,
// lane tables and tile offsets flagged or decoded wrong, never read or written out of bounds
// (the sanitizer builds run this too).
#include "compact_emulation.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "df11/cuda_compact.h"
#include "df11/exec_compact_encode.h"
#include "df11/group.h"
#include "gaussian_bf16.h"

namespace df11 {
namespace {

// (blob, its code's table).
std::pair<std::vector<uint8_t>, CompactCode> encoded(const std::vector<uint16_t>& w, uint32_t rows,
                                                     uint32_t cols) {
  auto blob = encode_compact_matrix(w, rows, cols, "m");
  EXPECT_TRUE(blob.is_ok());
  const CompactGeometry g = *compact_geometry(rows, cols, "m");
  const auto code = compact_code(
      std::span<const uint8_t, kCompactSymbols>(blob->data() + g.lengths, kCompactSymbols), "m");
  EXPECT_TRUE(code.is_ok());
  return {*blob, *code};
}

// The decode table against the code's one-codeword table: at every 12-bit index, the first
// codeword, and the second exactly where both end within the 12 bits.
TEST(CompactEmulation, DecodeTableHoldsOneOrTwoCodewordsPerIndex) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);
  const std::vector<uint16_t> gauss = gaussian_bf16(4096, 0.02f, 3);
  const std::vector<uint16_t>* matrices[] = {&gauss, &all};
  for (const std::vector<uint16_t>* w : matrices) {
    const auto [blob, code] = encoded(*w, 16, static_cast<uint32_t>(w->size() / 16));
    const std::vector<uint32_t> t = cuda::compact_decode_table(code);
    ASSERT_EQ(t.size(), cuda::kCompactDecodeTableEntries);
    uint32_t both = 0;
    for (uint32_t i = 0; i < t.size(); ++i) {
      const uint32_t a = code.table[i];
      const uint32_t la = a >> 8;
      ASSERT_NE(a, 0u) << "a complete code has a codeword at every index";
      EXPECT_EQ(t[i] & 0xFF, a & 0xFF) << i;
      EXPECT_EQ((t[i] >> 16) & 0xF, la) << i;
      EXPECT_EQ((t[i] >> 26) & 1, 0u) << i;
      const uint32_t b = code.table[i >> la];
      const uint32_t lb = b >> 8;
      const bool fits = lb <= kCompactMaxCodeBits - la;
      EXPECT_EQ((t[i] >> 25) & 1, fits ? 1u : 0u) << i;
      EXPECT_EQ(t[i] >> 27, fits ? la + lb : la) << i;
      if (fits) {
        EXPECT_EQ((t[i] >> 8) & 0xFF, b & 0xFF) << i;
      }
      both += fits;
    }
    if (w == &gauss) {
      EXPECT_GT(both, t.size() / 2);  // short codewords: mostly pairs
    }
  }
  // An incomplete code: indexes without a codeword are marked (and take one bit).
  CompactCode sparse{};
  sparse.table[0] = 1 << 8 | 7;  // the codeword "0" (one bit) for exponent 7, nothing else
  for (uint32_t i = 0; i < sparse.table.size(); i += 2) sparse.table[i] = 1 << 8 | 7;
  const std::vector<uint32_t> t = cuda::compact_decode_table(sparse);
  EXPECT_EQ((t[1] >> 26) & 1, 1u);
  EXPECT_EQ(t[1] >> 27, 1u);
  EXPECT_EQ(t[0] & 0xFFFF, 7u | 7u << 8);
  EXPECT_EQ(t[0] >> 27, 2u);
}

TEST(CompactEmulation, DecodesTheEncodersBlobsBitForBit) {
  const uint32_t shapes[][2] = {{1, 1}, {3, 5}, {16, 256}, {17, 33}, {40, 520}, {64, 4096}};
  uint32_t seed = 1;
  for (const auto& s : shapes) {
    const std::vector<uint16_t> w = gaussian_bf16(size_t{s[0]} * s[1], 0.02f, seed++);
    const auto [blob, code] = encoded(w, s[0], s[1]);
    std::vector<uint16_t> out(w.size(), 0xDEAD);
    const Status st = cuda::compact_to_bf16_emulated(blob, code.table, out, "m");
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(out, w) << s[0] << " x " << s[1];
  }
  std::vector<uint16_t> all(65536);  // every pattern: 256 codewords of 8 bits
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);
  const auto [blob, code] = encoded(all, 256, 256);
  std::vector<uint16_t> out(all.size());
  ASSERT_TRUE(cuda::compact_to_bf16_emulated(blob, code.table, out, "m").is_ok());
  EXPECT_EQ(out, all);
}

TEST(CompactEmulation, CorruptBlobsAreFlaggedOrDecodeWrongInBounds) {
  const std::vector<uint16_t> w = gaussian_bf16(40 * 520, 0.02f, 7);
  const auto [blob, code] = encoded(w, 40, 520);
  const CompactGeometry g = *compact_geometry(40, 520, "m");
  std::mt19937 rng(3);
  uint32_t flagged = 0;
  for (uint32_t trial = 0; trial < 300; ++trial) {
    std::vector<uint8_t> b = blob;
    const uint64_t from = trial % 3 == 0 ? g.tile_bits : trial % 3 == 1 ? g.lane_tables : g.stream;
    const uint64_t span = trial % 3 == 2 ? b.size() - g.stream : g.byte_plane - from;
    for (uint32_t k = 0; k < 4; ++k)
      b[from + rng() % span] ^= static_cast<uint8_t>(1u << (rng() % 8));
    std::vector<uint16_t> out(w.size());
    const Status st = cuda::compact_to_bf16_emulated(b, code.table, out, "m.bin");
    if (!st.is_ok()) {
      EXPECT_EQ(st.code(), ErrorCode::kCorruptData) << st.to_string();
      EXPECT_EQ(st.message().rfind("m.bin: ", 0), 0u);
      ++flagged;
    }
  }
  EXPECT_GT(flagged, 0u);
  // A tile's first bit far past the stream: its lanes read zeros (clamped) and are flagged
  // where the code has no all-zero codeword.
  std::vector<uint8_t> b = blob;
  store_le64(b.data() + g.tile_bits + 8, uint64_t{1} << 60);
  std::vector<uint16_t> out(w.size());
  const Status st = cuda::compact_to_bf16_emulated(b, code.table, out, "m");
  EXPECT_TRUE(st.is_ok() || st.code() == ErrorCode::kCorruptData);
  // The output's size is checked.
  out.pop_back();
  EXPECT_EQ(cuda::compact_to_bf16_emulated(blob, code.table, out, "m").code(),
            ErrorCode::kInvalidArgument);
}

TEST(CompactEmulation, TranscodeWritesTheReferenceEncodersBytes) {
  const uint32_t shapes[][2] = {{1, 1}, {3, 5}, {16, 256}, {17, 33}, {40, 520}, {300, 4096}};
  uint32_t seed = 20;
  for (const auto& s : shapes) {
    const std::vector<uint16_t> w = gaussian_bf16(size_t{s[0]} * s[1], 0.02f, seed++);
    const auto lengths = *choose_compact_lengths(cuda::compact_histogram_emulated(w, s[0], s[1]));
    const auto got = cuda::compact_pack_emulated(w, s[0], s[1], lengths, "m");
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    EXPECT_EQ(*got, *encode_compact_matrix(w, s[0], s[1], "m")) << s[0] << " x " << s[1];
  }
  // Every BF16 pattern, and lanes far apart (lane_base the longest less 255).
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);
  auto lengths = *choose_compact_lengths(cuda::compact_histogram_emulated(all, 256, 256));
  EXPECT_EQ(*cuda::compact_pack_emulated(all, 256, 256, lengths, "m"),
            *encode_compact_matrix(all, 256, 256, "m"));
  std::vector<uint16_t> far(16 * 256, 0x3F80);
  for (uint32_t c = 0; c < 256; ++c) far[c] = static_cast<uint16_t>((c % 200 + 1) << 7 | 5);
  lengths = *choose_compact_lengths(cuda::compact_histogram_emulated(far, 16, 256));
  EXPECT_EQ(*cuda::compact_pack_emulated(far, 16, 256, lengths, "m"),
            *encode_compact_matrix(far, 16, 256, "m"));
  // Lengths without a code for one of the matrix's exponents.
  lengths.fill(0);
  lengths[127] = 1;
  EXPECT_EQ(cuda::compact_pack_emulated(far, 16, 256, lengths, "m").status().code(),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace df11
