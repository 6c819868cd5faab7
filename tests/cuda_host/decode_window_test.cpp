// The CUDA kernel's window decoder (decoder/cuda/host/decode_core.h: decode_window() with
// the multi-code table built by multi_entry()) against the definition it must equal: codes
// decoded one at a time from the joined table (spec 3.3, 4.3), whatever the tables hold.
// Random joined tables cover prefix-consistent ones (where the 12-bit multi index decides
// codes of 9 to 12 bits, decoder/cuda/NOTES.md), arbitrary ones (symbols that depend on
// bits past the index, which must escape to the joined table) and unusable entries. Runs
// without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "decode_core.h"

namespace df11 {
namespace {

using cuda::detail::bits_at;
using cuda::detail::decode_window;
using cuda::detail::kBadEnd;
using cuda::detail::kMultiEntries;
using cuda::detail::kMultiEscape;
using cuda::detail::kTableEntries;
using cuda::detail::multi_entry;
using cuda::detail::slot_stride_for;
using cuda::detail::table_entry;
using cuda::detail::walk_subtables;
using cuda::detail::WindowResult;

// A joined table with table_entry()'s invariants: row 0 at depth 0, the others at depth 1-3;
// in a row of depth d a symbol has 8d+1 .. 8d+8 bits, a pointer leads to a row of depth d+1,
// 0 is unusable. `consistent`: every symbol fills the entries of all its extensions, as a
// prefix code's table does (then the multi index decides most codes of 9-12 bits).
std::vector<uint16_t> random_table(std::mt19937_64& rng, bool consistent) {
  std::vector<uint16_t> t(kTableEntries, 0);
  const uint32_t rows = 2 + rng() % 16;
  std::vector<uint32_t> depth(rows, 0);
  for (uint32_t r = 1; r < rows; ++r) depth[r] = 1 + rng() % 3;
  const uint32_t pointer_percent = consistent ? 4 : 25;
  const uint32_t unusable_percent = consistent ? 0 : 5;
  for (uint32_t r = 0; r < rows; ++r) {
    std::vector<uint32_t> below;
    for (uint32_t q = 1; q < rows; ++q) {
      if (depth[q] == depth[r] + 1) below.push_back(q);
    }
    for (uint32_t i = 0; i < 256; ++i) {
      const uint32_t kind = rng() % 100;
      uint32_t e = 0;
      if (kind < pointer_percent) {
        e = below.empty() ? 0 : below[rng() % below.size()];
      } else if (kind >= pointer_percent + unusable_percent) {
        // Short codes are the common ones (root symbols of 1-4 bits fill the multi table).
        const uint32_t extra =
            consistent ? std::min<uint32_t>(7, rng() % 4 + rng() % 2) : rng() % 8;
        e = ((8 * depth[r] + 1 + extra) << 8) | (rng() & 0xFF);
      }
      t[r * 256 + i] = static_cast<uint16_t>(e);
    }
    if (!consistent) continue;
    for (uint32_t i = 0; i < 256;) {  // a symbol of L bits covers 2^(8 - L') entries
      const uint32_t e = t[r * 256 + i];
      const uint32_t len = e >> 8;
      const uint32_t span = e >= 0x100 ? 1u << (8 * depth[r] + 8 - len) : 1u;
      for (uint32_t k = i; k < i + span && k < 256; ++k) t[r * 256 + k] = static_cast<uint16_t>(e);
      i += span;
    }
  }
  return t;
}

// The definition: one code at a time, every code looked up with its 8 bits per level.
template <typename Table>
WindowResult decode_one_by_one(const Table& table, uint32_t w0, uint32_t w1, uint32_t w2,
                               uint32_t gap, std::array<uint8_t, 68>& out) {
  uint32_t pos = gap, count = 0;
  while (pos < kBitsPerWindow) {
    const uint32_t top = bits_at(w0, w1, w2, pos);
    uint32_t e = table(top >> 24);
    if (e < 0x100) e = walk_subtables(table, e, top);
    if (e == 0) return WindowResult{count, kBadEnd};
    out[count++] = static_cast<uint8_t>(e);
    pos += e >> 8;
  }
  return WindowResult{count, pos};
}

TEST(CudaWindowDecode, EqualsOneCodeAtATimeForAnyTables) {
  std::mt19937_64 rng(20261124);
  uint64_t windows = 0, bad = 0, decided_long = 0, escapes = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    const bool consistent = trial % 2 == 0;
    const std::vector<uint16_t> rows = random_table(rng, consistent);
    const auto table = [&](uint32_t i) { return uint32_t{rows[i]}; };
    std::vector<uint32_t> multi_rows(kMultiEntries);
    for (uint32_t i = 0; i < kMultiEntries; ++i) {
      multi_rows[i] = multi_entry(table, i);
      if (multi_rows[i] == kMultiEscape)
        ++escapes;
      else if (multi_rows[i] >> 30 == 1 && ((multi_rows[i] >> 24) & 63) > 8)
        ++decided_long;
    }
    const auto multi = [&](uint32_t i) { return multi_rows[i]; };
    for (int w = 0; w < 400; ++w) {
      uint32_t w0 = static_cast<uint32_t>(rng()), w1 = static_cast<uint32_t>(rng());
      uint32_t w2 = static_cast<uint32_t>(rng());
      if (w % 3 == 0) {  // runs of ones reach the long codes (canonical tables put them last)
        w0 |= static_cast<uint32_t>(rng() | rng());
        w1 |= static_cast<uint32_t>(rng() | rng());
      } else if (w % 3 == 1) {  // runs of zeros: the shortest codes, many per lookup
        w0 &= static_cast<uint32_t>(rng() & rng());
        w1 &= static_cast<uint32_t>(rng() & rng());
        w2 &= static_cast<uint32_t>(rng());
      }
      const uint32_t gap = static_cast<uint32_t>(rng() % 32);
      std::array<uint8_t, 68> want{}, got{};
      const WindowResult expected = decode_one_by_one(table, w0, w1, w2, gap, want);
      const WindowResult r =
          decode_window(multi, table, w0, w1, w2, gap, 0,
                        [&](uint32_t j, uint32_t v) { got.at(j) = static_cast<uint8_t>(v); });
      ++windows;
      if (expected.end == kBadEnd) ++bad;
      ASSERT_EQ(r.count, expected.count) << "trial " << trial << " window " << w;
      ASSERT_EQ(r.end, expected.end) << "trial " << trial << " window " << w;
      for (uint32_t j = 0; j < expected.count; ++j) {
        ASSERT_EQ(got[j], want[j]) << "trial " << trial << " window " << w << " code " << j;
      }
    }
  }
  // The cases that matter were reached: unusable codes, escapes, long codes decided.
  EXPECT_GT(bad, windows / 20);
  EXPECT_LT(bad, windows / 2);
  EXPECT_GT(escapes, 1000u);
  EXPECT_GT(decided_long, 1000u);
}

// The kernel sizes each thread's exponent slot by the plan's shortest code length L
// (slot_stride_for) and builds its table with table_entry(..., L, ...), which marks shorter
// symbols unusable. Whatever the LUT bytes (device data may differ from the validated host
// copy), no window then writes a byte, or leaves a byte for scatter_exponents to read, past
// its slot.
TEST(CudaWindowDecode, SlotSizedByShortestCodeHoldsEveryWindow) {
  std::mt19937_64 rng(11);
  for (uint32_t min_length = 1; min_length <= 8; ++min_length) {
    const uint32_t stride = slot_stride_for(min_length);
    ASSERT_EQ(stride % 8, 4u) << "an odd number of words";
    uint32_t most_codes = 0, most_written = 0;
    for (int trial = 0; trial < 60; ++trial) {
      // Random LUT bytes with short lengths common: rows of depth 0-3, pointers, symbols.
      const uint32_t n_luts = 2 + static_cast<uint32_t>(rng() % 17);
      uint64_t row_depths = 0;
      for (uint32_t r = 1; r + 1 < n_luts; ++r) row_depths |= uint64_t{1 + rng() % 3} << (3 * r);
      for (uint32_t r = n_luts - 1; r < 17; ++r) row_depths |= uint64_t{7} << (3 * r);
      std::vector<uint8_t> luts(256 * n_luts);
      for (uint32_t i = 0; i < 256 * (n_luts - 1); ++i) {
        luts[i] = static_cast<uint8_t>(rng() % 8 == 0 ? 240 + rng() % 16 : rng());
      }
      for (uint32_t v = 0; v < 256; ++v) {
        luts[256 * (n_luts - 1) + v] = static_cast<uint8_t>(rng() % 2 ? 1 + rng() % 8 : rng() % 33);
      }
      std::vector<uint16_t> rows(kTableEntries);
      for (uint32_t i = 0; i < kTableEntries; ++i) {
        rows[i] =
            static_cast<uint16_t>(table_entry(luts.data(), n_luts, row_depths, min_length, i));
        if (rows[i] >= 0x100) {
          ASSERT_GE(rows[i] >> 8, min_length) << "entry " << i;
        }
      }
      const auto table = [&](uint32_t i) { return uint32_t{rows[i]}; };
      std::vector<uint32_t> multi_rows(kMultiEntries);
      for (uint32_t i = 0; i < kMultiEntries; ++i) multi_rows[i] = multi_entry(table, i);
      const auto multi = [&](uint32_t i) { return multi_rows[i]; };
      for (int w = 0; w < 200; ++w) {
        uint32_t w0 = static_cast<uint32_t>(rng()), w1 = static_cast<uint32_t>(rng());
        uint32_t w2 = static_cast<uint32_t>(rng());
        if (w % 2 == 0) {  // a repeated byte: the same (often shortest) code all along
          const uint32_t b =
              (w / 2) % 4 == 0 ? 0u : static_cast<uint32_t>(rng() & 0xFF) * 0x01010101u;
          w0 = w1 = w2 = b;
        }
        uint32_t written = 0;
        const WindowResult r =
            decode_window(multi, table, w0, w1, w2, static_cast<uint32_t>(rng() % 32), 0,
                          [&](uint32_t j, uint32_t) { written = std::max(written, j + 1); });
        const uint32_t codes = (kBitsPerWindow - 1) / min_length + 1;
        ASSERT_LE(r.count, codes);
        ASSERT_LE(written, codes + 2);  // a lookup after c codes writes bytes c .. c + 2
        ASSERT_LE(written, stride);
        ASSERT_LT((r.count + 2) / 4, stride / 4);  // scatter_exponents' last word
        most_codes = std::max(most_codes, r.count);
        most_written = std::max(most_written, written);
      }
    }
    // Windows full of the shortest code were reached: the bound is tight, not vacuous.
    EXPECT_EQ(most_codes, (kBitsPerWindow - 1) / min_length + 1) << "L = " << min_length;
    EXPECT_GE(most_written, most_codes) << "L = " << min_length;
  }
  EXPECT_EQ(slot_stride_for(1), 68u);
  EXPECT_EQ(slot_stride_for(2), 36u);
}

}  // namespace
}  // namespace df11
