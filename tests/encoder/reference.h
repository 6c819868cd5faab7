// Independent reference implementations used to check the encoder: canonical codes from
// lengths, a bit-by-bit decoder over the code table (no lookup tables), and gaps and output
// positions recomputed from code start bits by prefix sums. Written from the format's
// definitions, sharing no code with encoder/src.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

namespace df11::testing {

// Canonical code (spec 2.3) from lengths: symbols sorted by (length, value); each code is
// the previous plus one, left-shifted when the length grows.
inline std::vector<uint32_t> reference_canonical(std::span<const uint8_t> lengths) {
  std::vector<std::pair<uint32_t, uint32_t>> order;  // (length, symbol)
  for (uint32_t s = 0; s < lengths.size(); ++s) {
    if (lengths[s] != 0) order.emplace_back(lengths[s], s);
  }
  std::sort(order.begin(), order.end());
  std::vector<uint32_t> bits(lengths.size(), 0);
  uint64_t code = 0;
  uint32_t prev_len = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const auto [len, sym] = order[i];
    if (i > 0)
      code = (code + 1) << (len - prev_len);
    else
      code = 0;
    bits[sym] = static_cast<uint32_t>(code);
    prev_len = len;
  }
  return bits;
}

// Number of distinct k-bit prefixes (k = 8, 16, 24) of codes longer than k bits.
inline uint32_t reference_subtables(std::span<const uint8_t> lengths,
                                    std::span<const uint32_t> bits, uint32_t index_bits = 8) {
  uint32_t total = 0;
  for (uint32_t k = index_bits; k < 32; k += index_bits) {
    std::vector<uint64_t> prefixes;
    for (size_t s = 0; s < lengths.size(); ++s) {
      if (lengths[s] > k) prefixes.push_back(bits[s] >> (lengths[s] - k));
    }
    std::sort(prefixes.begin(), prefixes.end());
    total +=
        static_cast<uint32_t>(std::unique(prefixes.begin(), prefixes.end()) - prefixes.begin());
  }
  return total;
}

inline uint32_t stream_bit(std::span<const uint8_t> bytes, uint64_t bit) {
  return (bytes[bit / 8] >> (7 - bit % 8)) & 1;
}

// Decodes n codes bit by bit with the code table. Returns the exponents; `starts` receives
// each code's first bit, `end_bit` the bit after the last code. Throws if the stream does
// not decode.
inline std::vector<uint8_t> reference_decode(std::span<const uint8_t> stream,
                                             std::span<const uint8_t> lengths,
                                             std::span<const uint32_t> bits, uint64_t n,
                                             std::vector<uint64_t>* starts = nullptr,
                                             uint64_t* end_bit = nullptr) {
  std::map<std::pair<uint32_t, uint32_t>, uint8_t> table;  // (length, code) -> symbol
  for (uint32_t s = 0; s < lengths.size(); ++s) {
    if (lengths[s] != 0) table[{lengths[s], bits[s]}] = static_cast<uint8_t>(s);
  }
  std::vector<uint8_t> out;
  out.reserve(n);
  uint64_t pos = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (starts != nullptr) starts->push_back(pos);
    uint32_t code = 0;
    for (uint32_t len = 1;; ++len) {
      if (len > 32 || pos >= 8 * stream.size()) throw std::runtime_error("stream does not decode");
      code = (code << 1) | stream_bit(stream, pos++);
      const auto it = table.find({len, code});
      if (it != table.end()) {
        out.push_back(it->second);
        break;
      }
    }
  }
  if (end_bit != nullptr) *end_bit = pos;
  return out;
}

// spec 3.5: field w = offset of the first code starting in window w, 0 if none.
inline std::vector<uint32_t> reference_gaps(std::span<const uint64_t> code_starts,
                                            uint64_t n_windows) {
  std::vector<uint32_t> gaps(n_windows, 0);
  for (uint64_t w = 0; w < n_windows; ++w) {
    const auto it = std::lower_bound(code_starts.begin(), code_starts.end(), 64 * w);
    if (it != code_starts.end() && *it < 64 * w + 64) gaps[w] = static_cast<uint32_t>(*it - 64 * w);
  }
  return gaps;
}

// spec 3.6: entry b = number of codes starting before bit 32768 b; entry n_blocks = n.
inline std::vector<uint32_t> reference_output_positions(std::span<const uint64_t> code_starts,
                                                        uint64_t n_blocks) {
  std::vector<uint32_t> op(n_blocks + 1);
  for (uint64_t b = 0; b <= n_blocks; ++b) {
    op[b] = static_cast<uint32_t>(
        std::lower_bound(code_starts.begin(), code_starts.end(), 32768 * b) - code_starts.begin());
  }
  op[n_blocks] = static_cast<uint32_t>(code_starts.size());
  return op;
}

// Reads 5-bit field w, bit by bit (MSB-first).
inline uint32_t reference_gap_field(std::span<const uint8_t> gaps, uint64_t w) {
  uint32_t v = 0;
  for (uint64_t b = 5 * w; b < 5 * w + 5; ++b) v = (v << 1) | stream_bit(gaps, b);
  return v;
}

}  // namespace df11::testing
