// Full independent check of an encoded group against its input: bit-by-bit decode with the
// code table, a table-driven decode, gaps and output positions recomputed from code starts.
#pragma once

#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "df11/encoder.h"
#include "reference.h"

namespace df11::testing {

using Members = std::vector<std::vector<uint16_t>>;

inline std::vector<std::span<const uint16_t>> spans_of(const Members& members) {
  return {members.begin(), members.end()};
}

// Zero-filled buffers sized for `plan` (luts copied), and the spans encode writes into.
inline GroupBuffers zeroed_buffers(const GroupPlan& plan) {
  GroupBuffers b;
  b.encoded_exponent.resize(plan.n_bytes);
  b.sign_mantissa.resize(plan.n_elements);
  b.output_positions.resize(plan.output_positions_bytes);
  b.gaps.resize(plan.gaps_bytes);
  b.luts = plan.luts;
  return b;
}
inline GroupOutput output_of(GroupBuffers& b) {
  return GroupOutput{b.encoded_exponent, b.sign_mantissa, b.output_positions, b.gaps};
}

// Plan + zero-filled buffers + encode_group_range over all chunks, with a chosen chunk
// size (encode_group always uses the default).
inline Result<GroupBuffers> encode_with_chunks(const Members& members, uint64_t chunk_weights,
                                               GroupPlan* plan_out) {
  const auto spans = spans_of(members);
  DF11_ASSIGN_OR_RETURN(GroupPlan plan, plan_group(spans, chunk_weights));
  GroupBuffers b = zeroed_buffers(plan);
  DF11_ASSIGN_OR_RETURN(plan.max_block_weights,
                        encode_group_range(spans, plan, 0, plan.n_chunks(), output_of(b)));
  for (int64_t s : plan.split_positions) {
    for (int k = 0; k < 8; ++k) b.split_positions.push_back(static_cast<uint8_t>(s >> (8 * k)));
  }
  if (plan_out != nullptr) *plan_out = std::move(plan);
  return b;
}

// Table-driven decode of n codes (spec 4: what a decoder does with the luts).
inline std::vector<uint8_t> lut_decode(std::span<const uint8_t> luts,
                                       std::span<const uint8_t> stream, uint64_t n) {
  const size_t rows = luts.size() / 256;
  const uint8_t* lengths = luts.data() + (rows - 1) * 256;
  std::vector<uint8_t> out;
  out.reserve(n);
  uint64_t pos = 0;
  auto byte_at = [&](uint64_t bit) -> uint32_t {  // 8 bits from `bit`, zeros past the end
    uint32_t v = 0;
    for (uint64_t k = 0; k < 8; ++k) {
      const uint64_t b = bit + k;
      v = (v << 1) | (b < 8 * stream.size() ? stream_bit(stream, b) : 0);
    }
    return v;
  };
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t row = 0;
    for (uint32_t level = 0;; ++level) {
      const uint32_t v = luts[row * 256 + byte_at(pos + 8 * level)];
      if (v < 240) {
        out.push_back(static_cast<uint8_t>(v));
        pos += lengths[v];
        break;
      }
      row = 256 - v;
      if (level == 3 || row + 1 >= rows) {
        ADD_FAILURE() << "bad table walk at code " << i;
        return out;
      }
    }
  }
  return out;
}

// Checks `b` (and `plan`, from the same encode) against the input, field by field.
inline void check_group(const Members& members, const GroupBuffers& b, const GroupPlan& plan) {
  std::vector<uint16_t> all;
  std::vector<int64_t> splits;
  for (const auto& m : members) {
    if (!all.empty()) splits.push_back(static_cast<int64_t>(all.size()));
    all.insert(all.end(), m.begin(), m.end());
  }
  const uint64_t n = all.size();
  ASSERT_EQ(plan.n_elements, n);

  // Histogram and code.
  Histogram h{};
  for (uint16_t w : all) ++h[(w >> 7) & 0xFF];
  EXPECT_EQ(plan.histogram, h);
  const std::vector<uint32_t> canon = reference_canonical(plan.code.length);
  for (int e = 0; e < 256; ++e) {
    EXPECT_EQ(plan.code.length[e] != 0, h[e] != 0);
    if (plan.code.length[e] != 0) {
      ASSERT_EQ(plan.code.bits[e], canon[e]);
    }
  }
  EXPECT_EQ(b.luts, plan.luts);

  // Sizes (spec 3.2).
  uint64_t n_bits = 0;
  for (uint16_t w : all) n_bits += plan.code.length[(w >> 7) & 0xFF];
  const uint64_t n_bytes = (n_bits + 7) / 8;
  const uint64_t n_blocks = (n_bytes + 4095) / 4096;
  const uint64_t n_windows = 512 * n_blocks;
  ASSERT_EQ(plan.n_bits, n_bits);
  ASSERT_EQ(b.encoded_exponent.size(), n_bytes);
  ASSERT_EQ(b.sign_mantissa.size(), n);
  ASSERT_EQ(b.output_positions.size(), 4 * (n_blocks + 1));
  ASSERT_EQ(b.gaps.size(), (5 * n_windows + 7) / 8);
  ASSERT_EQ(b.split_positions.size(), 8 * splits.size());
  for (size_t i = 0; i < splits.size(); ++i) {
    int64_t v = 0;
    for (int k = 7; k >= 0; --k) v = (v << 8) | b.split_positions[8 * i + k];
    EXPECT_EQ(v, splits[i]);
  }

  // Bit-by-bit decode with the code table, then rebuild every pattern.
  std::vector<uint64_t> starts;
  uint64_t end_bit = 0;
  std::vector<uint8_t> exps;
  try {
    exps = reference_decode(b.encoded_exponent, plan.code.length, plan.code.bits, n, &starts,
                            &end_bit);
  } catch (const std::exception& e) {
    FAIL() << e.what();
  }
  ASSERT_EQ(end_bit, n_bits);
  for (uint64_t bit = n_bits; bit < 8 * n_bytes; ++bit) {
    ASSERT_EQ(stream_bit(b.encoded_exponent, bit), 0u) << "padding bit " << bit;
  }
  for (uint64_t i = 0; i < n; ++i) {
    const uint8_t sm = b.sign_mantissa[i];
    const uint16_t w = static_cast<uint16_t>(((sm & 0x80) << 8) | (exps[i] << 7) | (sm & 0x7F));
    ASSERT_EQ(w, all[i]) << "weight " << i;
  }

  // Table-driven decode agrees.
  EXPECT_EQ(lut_decode(b.luts, b.encoded_exponent, n), exps);

  // Gaps (spec 3.5) and output positions (spec 3.6) from the code starts.
  const std::vector<uint32_t> gaps = reference_gaps(starts, n_windows);
  for (uint64_t w = 0; w < n_windows; ++w) {
    ASSERT_EQ(reference_gap_field(b.gaps, w), gaps[w]) << "gap field " << w;
  }
  for (uint64_t bit = 5 * n_windows; bit < 8 * b.gaps.size(); ++bit) {
    ASSERT_EQ(stream_bit(b.gaps, bit), 0u) << "gap padding bit " << bit;
  }
  const std::vector<uint32_t> op = reference_output_positions(starts, n_blocks);
  uint32_t max_block = 0;
  for (uint64_t k = 0; k <= n_blocks; ++k) {
    ASSERT_EQ(load_le32(b.output_positions.data() + 4 * k), op[k]) << "output position " << k;
    if (k < n_blocks) max_block = std::max(max_block, op[k + 1] - op[k]);
  }
  EXPECT_EQ(plan.max_block_weights, max_block);
}

// encode_group + check_group, and the same with a chosen chunk size must give equal bytes.
inline void round_trip(const Members& members, uint64_t chunk_weights = 0) {
  GroupPlan plan;
  const auto spans = spans_of(members);
  const auto b = encode_group(spans, &plan);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  check_group(members, *b, plan);
  if (chunk_weights != 0) {
    GroupPlan plan2;
    const auto b2 = encode_with_chunks(members, chunk_weights, &plan2);
    ASSERT_TRUE(b2.is_ok()) << b2.status().to_string();
    EXPECT_EQ(b2->encoded_exponent, b->encoded_exponent);
    EXPECT_EQ(b2->sign_mantissa, b->sign_mantissa);
    EXPECT_EQ(b2->gaps, b->gaps);
    EXPECT_EQ(b2->output_positions, b->output_positions);
    EXPECT_EQ(b2->luts, b->luts);
    EXPECT_EQ(b2->split_positions, b->split_positions);
    EXPECT_EQ(plan2.max_block_weights, plan.max_block_weights);
  }
}

}  // namespace df11::testing
