// build_luts(): walking the tables decodes every code; every entry is safe to read; row
// order and the lengths row are as documented; malformed codes are rejected.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>

#include "df11/encoder.h"
#include "encoder_test_data.h"
#include "reference.h"

namespace df11 {
namespace {

using testing::reference_canonical;
using testing::reference_subtables;
using testing::TestRng;

struct Walk {
  uint32_t symbol;
  uint32_t level;  // 0 = root
  std::vector<uint32_t> rows;
};

// Decodes the code at the top of `bits` (MSB first, 32 bits then 32 more) with the tables.
Walk walk(const std::vector<uint8_t>& luts, uint64_t bits) {
  Walk w{0, 0, {0}};
  uint32_t row = 0;
  for (uint32_t level = 0; level < 4; ++level) {
    const uint32_t index = static_cast<uint32_t>(bits >> (56 - 8 * level)) & 0xFF;
    const uint32_t v = luts[size_t{row} * 256 + index];
    if (v < kFirstPointerEntry) {
      w.symbol = v;
      w.level = level;
      return w;
    }
    row = 256 - v;
    w.rows.push_back(row);
  }
  ADD_FAILURE() << "table walk deeper than 4 levels";
  return w;
}

// Every check on the tables of one code.
void expect_tables_decode(const Code& code, uint64_t seed) {
  const auto luts = build_luts(code);
  ASSERT_TRUE(luts.is_ok()) << luts.status().to_string();
  const std::vector<uint32_t> bits = reference_canonical(code.length);
  const uint32_t subtables = reference_subtables(code.length, code.bits);
  ASSERT_EQ(luts->size(), size_t{256} * (2 + subtables));
  const uint32_t rows = static_cast<uint32_t>(luts->size() / 256);
  const uint8_t* lengths = luts->data() + size_t{rows - 1} * 256;

  for (int e = 0; e < 256; ++e) EXPECT_EQ(lengths[e], code.length[e]) << "lengths row, " << e;

  // Expected subtable rows: by level, then prefix value.
  std::vector<std::pair<uint32_t, uint64_t>> expected;
  for (int e = 0; e < 256; ++e) {
    for (uint32_t level = 1; 8 * level < code.length[e]; ++level) {
      expected.emplace_back(level, code.bits[e] >> (code.length[e] - 8 * level));
    }
  }
  std::sort(expected.begin(), expected.end());
  expected.erase(std::unique(expected.begin(), expected.end()), expected.end());

  TestRng rng(seed);
  for (int e = 0; e < 256; ++e) {
    const uint32_t len = code.length[e];
    if (len == 0) continue;
    for (int k = 0; k < 8; ++k) {  // the code followed by arbitrary bits
      const uint64_t follow = rng.next() >> len;
      const uint64_t stream = (uint64_t{code.bits[e]} << (64 - len)) | follow;
      const Walk w = walk(*luts, stream);
      ASSERT_EQ(w.symbol, static_cast<uint32_t>(e));
      EXPECT_EQ(lengths[w.symbol], len);
      EXPECT_EQ(w.level, (len - 1) / 8) << "decoded at the depth its length implies";
      for (uint32_t level = 1; level < w.rows.size(); ++level) {
        const auto want = std::make_pair(level, uint64_t{code.bits[e]} >> (len - 8 * level));
        const auto at = std::lower_bound(expected.begin(), expected.end(), want);
        ASSERT_NE(at, expected.end());
        EXPECT_EQ(w.rows[level], 1 + static_cast<uint32_t>(at - expected.begin()))
            << "subtable row order";
      }
    }
  }

  // Every entry of every table row is safe: a symbol with a length fitting the row's
  // depth, or a pointer to an existing subtable one level down.
  std::vector<int> depth(rows - 1, -1);
  depth[0] = 0;
  std::vector<uint32_t> todo = {0};
  while (!todo.empty()) {
    const uint32_t r = todo.back();
    todo.pop_back();
    for (uint32_t i = 0; i < 256; ++i) {
      const uint32_t v = (*luts)[size_t{r} * 256 + i];
      if (v < kFirstPointerEntry) {
        ASSERT_GT(lengths[v], 0) << "row " << r << " entry " << i;
        EXPECT_GT(lengths[v], 8 * depth[r]) << "row " << r << " entry " << i;
        EXPECT_LE(lengths[v], 8 * depth[r] + 8) << "row " << r << " entry " << i;
      } else {
        const uint32_t child = 256 - v;
        ASSERT_GE(child, 1u);
        ASSERT_LT(child, rows - 1) << "pointer past the subtables";
        if (depth[child] < 0) {
          depth[child] = depth[r] + 1;
          todo.push_back(child);
        }
        EXPECT_EQ(depth[child], depth[r] + 1);
        ASSERT_LE(depth[child], 3);
      }
    }
  }
  for (uint32_t r = 0; r + 1 < rows; ++r) EXPECT_GE(depth[r], 0) << "row " << r << " unreachable";
  (void)bits;
}

TEST(BuildLuts, RandomCodesDecodeThroughTheTables) {
  TestRng rng(21);
  for (int trial = 0; trial < 150; ++trial) {
    Histogram h{};
    const int symbols = 1 + static_cast<int>(rng.below(240));
    for (int k = 0; k < symbols; ++k)
      h[rng.below(240)] += 1 + rng.below(uint64_t{1} << rng.below(36));
    const auto code = build_code(h);
    ASSERT_TRUE(code.is_ok());
    expect_tables_decode(*code, trial);
  }
}

TEST(BuildLuts, SteepAndTableLimitedCodes) {
  Histogram steep{};
  uint64_t a = 1, b = 1;
  for (int e = 0; e < 220; ++e) {
    steep[e] = a;
    if (e % 3 == 2) {
      const uint64_t c = a + b;
      a = b;
      b = c;
    }
  }
  const auto c1 = build_code(steep);
  ASSERT_TRUE(c1.is_ok());
  EXPECT_EQ(c1->max_length, 32u);
  expect_tables_decode(*c1, 1);

  Histogram limited{};
  for (int e = 0; e < 240; ++e) limited[e] = e < 120 ? 100 : 40;
  const auto c2 = build_code(limited);
  ASSERT_TRUE(c2.is_ok());
  expect_tables_decode(*c2, 2);

  Histogram flat{};
  for (int e = 0; e < 240; ++e) flat[e] = 7;
  const auto c3 = build_code(flat);
  ASSERT_TRUE(c3.is_ok());
  expect_tables_decode(*c3, 3);
}

TEST(BuildLuts, OneSymbolFillsTheWholeRoot) {
  Histogram h{};
  h[42] = 9;
  const auto code = build_code(h);
  ASSERT_TRUE(code.is_ok());
  const auto luts = build_luts(*code);
  ASSERT_TRUE(luts.is_ok());
  ASSERT_EQ(luts->size(), 512u);
  for (int i = 0; i < 256; ++i) EXPECT_EQ((*luts)[i], 42) << i;
  EXPECT_EQ((*luts)[256 + 42], 1);
  expect_tables_decode(*code, 4);
}

TEST(BuildLuts, IncompleteCodeWithOnlyLongCodes) {
  // Two 9-bit codes: the root has one pointer, the rest repeats it; the subtable's unused
  // half repeats the last symbol.
  Code code;
  code.length[5] = 9;
  code.length[6] = 9;
  code.bits[5] = 0;
  code.bits[6] = 1;
  code.max_length = 9;
  const auto luts = build_luts(code);
  ASSERT_TRUE(luts.is_ok()) << luts.status().to_string();
  ASSERT_EQ(luts->size(), 3u * 256);
  for (int i = 0; i < 256; ++i) EXPECT_EQ((*luts)[i], 255) << i;
  for (int i = 0; i < 128; ++i) EXPECT_EQ((*luts)[256 + i], 5) << i;
  for (int i = 128; i < 256; ++i) EXPECT_EQ((*luts)[256 + i], 6) << i;
  expect_tables_decode(code, 5);
}

Code canonical(const std::vector<std::pair<int, int>>& symbol_lengths) {
  Code c;
  for (auto [s, l] : symbol_lengths) c.length[s] = static_cast<uint8_t>(l);
  const std::vector<uint32_t> bits = reference_canonical(c.length);
  for (int s = 0; s < 256; ++s) {
    c.bits[s] = bits[s];
    c.max_length = std::max<uint32_t>(c.max_length, c.length[s]);
  }
  return c;
}

TEST(BuildLuts, RejectsMalformedCodes) {
  Code empty;
  EXPECT_EQ(build_luts(empty).status().code(), ErrorCode::kInvalidArgument);

  Code too_long = canonical({{1, 1}, {2, 1}});
  too_long.length[2] = 33;
  EXPECT_EQ(build_luts(too_long).status().code(), ErrorCode::kInvalidArgument);

  Code pointer_symbol = canonical({{1, 1}, {240, 1}});
  EXPECT_EQ(build_luts(pointer_symbol).status().code(), ErrorCode::kInvalidArgument);

  Code duplicate = canonical({{1, 2}, {2, 2}, {3, 2}});
  duplicate.bits[3] = duplicate.bits[2];
  EXPECT_EQ(build_luts(duplicate).status().code(), ErrorCode::kInvalidArgument);

  Code prefix = canonical({{1, 1}, {2, 2}, {3, 2}});
  prefix.bits[2] = 0;  // "00" starts with symbol 1's "0"
  EXPECT_EQ(build_luts(prefix).status().code(), ErrorCode::kInvalidArgument);

  Code wide = canonical({{1, 1}, {2, 1}});
  wide.bits[2] = 2;  // two bits in a one-bit code
  EXPECT_EQ(build_luts(wide).status().code(), ErrorCode::kInvalidArgument);

  // 34 nine-bit codes have 17 distinct 8-bit prefixes: one subtable too many.
  std::vector<std::pair<int, int>> many;
  for (int s = 0; s < 240; ++s) many.emplace_back(s, s < 34 ? 9 : 8);
  const Code seventeen = canonical(many);
  const auto luts = build_luts(seventeen);
  EXPECT_EQ(luts.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(luts.status().message().find("17 subtables"), std::string::npos)
      << luts.status().message();
  many[33].second = 8;  // 33 nine-bit codes: 17 prefixes still (odd count)
  EXPECT_FALSE(build_luts(canonical(many)).is_ok());
  many[32].second = 8;  // 32: exactly 16
  EXPECT_TRUE(build_luts(canonical(many)).is_ok());
}

}  // namespace
}  // namespace df11
