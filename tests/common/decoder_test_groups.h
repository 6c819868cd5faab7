// Test-only construction of DF11 groups straight from the spec rules (spec 2.3, 3.3-3.6),
// independent of df11_encoder: a canonical code from chosen lengths, its lookup tables, the
// bitstream, gaps and output positions. Decoder tests use it to reach shapes the real
// encoder never produces (deep codes, chosen lengths) and to cross-check the encoder.
// Header-only: tests/common/*.cpp are linked into every module's tests.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "df11/group.h"

namespace df11::test {

using CodeLengths = std::array<uint8_t, 256>;  // 0 = symbol not in the code

// spec 2.3: canonical code words: shorter codes first, equal lengths by symbol value.
struct HandCode {
  CodeLengths length{};
  std::array<uint32_t, 256> bits{};
};

inline HandCode canonical_code(const CodeLengths& length) {
  HandCode c;
  c.length = length;
  uint64_t next = 0;
  for (uint32_t len = 1; len <= kMaxCodeLength; ++len) {
    for (uint32_t s = 0; s < 256; ++s) {
      if (length[s] == len) c.bits[s] = static_cast<uint32_t>(next++);
    }
    next <<= 1;
  }
  return c;
}

// spec 3.3: root row, one subtable per distinct 8-bit prefix of longer codes (numbered in
// order of first use), then the lengths row.
inline std::vector<uint8_t> hand_luts(const HandCode& code) {
  std::vector<std::array<uint8_t, 256>> rows(1);
  std::vector<std::array<bool, 256>> is_pointer(1);
  for (uint32_t s = 0; s < 256; ++s) {
    const uint32_t len = code.length[s];
    if (len == 0) continue;
    uint32_t row = 0;
    uint32_t level = 0;
    while (len > 8 * (level + 1)) {
      const uint32_t byte = (code.bits[s] >> (len - 8 * (level + 1))) & 0xFF;
      if (!is_pointer[row][byte]) {
        const uint32_t fresh = static_cast<uint32_t>(rows.size());
        if (fresh > kMaxSubtables) throw std::runtime_error("hand_luts: too many subtables");
        rows.emplace_back();
        is_pointer.emplace_back();
        rows[row][byte] = static_cast<uint8_t>(256 - fresh);
        is_pointer[row][byte] = true;
      }
      row = 256 - rows[row][byte];
      ++level;
    }
    const uint32_t rest = len - 8 * level;  // 1..8 bits in this row
    const uint32_t prefix = code.bits[s] & ((1u << rest) - 1);
    for (uint32_t k = 0; k < (1u << (8 - rest)); ++k) {
      rows[row][(prefix << (8 - rest)) + k] = static_cast<uint8_t>(s);
    }
  }
  std::vector<uint8_t> luts;
  for (const auto& r : rows) luts.insert(luts.end(), r.begin(), r.end());
  luts.insert(luts.end(), code.length.begin(), code.length.end());
  return luts;
}

inline uint8_t exponent_of(uint16_t w) { return static_cast<uint8_t>((w >> 7) & 0xFF); }
inline uint8_t sign_mantissa_of(uint16_t w) {
  return static_cast<uint8_t>(((w >> 8) & 0x80) | (w & 0x7F));
}

// Packs 5-bit field w (spec 3.5, MSB-first).
inline void write_gap(std::vector<uint8_t>& gaps, uint64_t w, uint32_t value) {
  for (uint32_t k = 0; k < kGapBits; ++k) {
    const uint64_t bit = w * kGapBits + k;
    const uint8_t mask = static_cast<uint8_t>(0x80u >> (bit % 8));
    if ((value >> (kGapBits - 1 - k)) & 1) {
      gaps[bit / 8] |= mask;
    } else {
      gaps[bit / 8] &= static_cast<uint8_t>(~mask);
    }
  }
}

inline void write_output_position(std::vector<uint8_t>& op, uint64_t b, uint32_t value) {
  store_le32(op.data() + 4 * b, value);
}

// Encodes `weights` (every exponent must have a code) with `code`; gaps of windows without
// a code start are 0, padding bits are 0. `splits` become split_positions.
inline GroupBuffers hand_encode(const HandCode& code, std::span<const uint16_t> weights,
                                std::span<const int64_t> splits = {}) {
  GroupBuffers g;
  g.luts = hand_luts(code);
  std::vector<uint64_t> starts;
  uint64_t pos = 0;
  for (uint16_t w : weights) {
    const uint32_t len = code.length[exponent_of(w)];
    if (len == 0) throw std::runtime_error("hand_encode: exponent without a code");
    starts.push_back(pos);
    pos += len;
  }
  g.encoded_exponent.assign((pos + 7) / 8, 0);
  for (size_t i = 0; i < weights.size(); ++i) {
    const uint8_t e = exponent_of(weights[i]);
    for (uint32_t k = 0; k < code.length[e]; ++k) {
      if ((code.bits[e] >> (code.length[e] - 1 - k)) & 1) {
        const uint64_t bit = starts[i] + k;
        g.encoded_exponent[bit / 8] |= static_cast<uint8_t>(0x80u >> (bit % 8));
      }
    }
    g.sign_mantissa.push_back(sign_mantissa_of(weights[i]));
  }
  const uint64_t n_blocks = (g.encoded_exponent.size() + kBytesPerBlock - 1) / kBytesPerBlock;
  g.gaps.assign(gap_bytes_for_blocks(n_blocks), 0);
  uint64_t last_window = ~0ull;
  for (uint64_t s : starts) {
    if (s / kBitsPerWindow != last_window) {
      last_window = s / kBitsPerWindow;
      write_gap(g.gaps, last_window, static_cast<uint32_t>(s % kBitsPerWindow));
    }
  }
  g.output_positions.assign(4 * (n_blocks + 1), 0);
  uint64_t i = 0;
  for (uint64_t b = 0; b <= n_blocks; ++b) {
    while (i < starts.size() && starts[i] < b * kBitsPerBlock) ++i;
    write_output_position(g.output_positions, b, static_cast<uint32_t>(i));
  }
  for (int64_t s : splits) {
    uint8_t le[8];
    store_le64(le, static_cast<uint64_t>(s));
    g.split_positions.insert(g.split_positions.end(), le, le + 8);
  }
  return g;
}

// A complete code over `symbols` (in order) with lengths 1, 2, ..., k-1, k-1: the deepest
// possible tree, reaching every LUT depth once k exceeds 25.
inline CodeLengths unary_lengths(std::span<const uint8_t> symbols) {
  CodeLengths len{};
  const size_t k = symbols.size();
  for (size_t i = 0; i < k; ++i) {
    len[symbols[i]] = static_cast<uint8_t>(i + 1 < k ? i + 1 : k - 1);
  }
  if (k == 1) len[symbols[0]] = 1;
  return len;
}

}  // namespace df11::test
