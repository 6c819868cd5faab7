// Lookup table of the fast decoder: the root LUT row joined with the code-lengths row
// (spec 3.3), so that the common case, a code of at most 8 bits, costs one load.
#pragma once

#include <array>
#include <cstdint>

#include "df11/group.h"

namespace df11::detail {

struct FastTable {
  // Per value of the next 8 stream bits: (code length << 8) | exponent for a root symbol
  // of 1..8 bits; 0 sends that code to decode_slow() (a pointer entry, or a length that a
  // validated group never has).
  std::array<uint16_t, kLutRowSize> root{};
  const uint8_t* luts = nullptr;     // the group's rows, for codes of more than 8 bits
  const uint8_t* lengths = nullptr;  // the last row: code length of each exponent
  uint32_t n_luts = 0;
};

// `group.luts` must hold at least 2 whole rows (validate_group() checks it).
FastTable make_fast_table(const GroupView& group);

// Decodes the code at the top of `bits` (at least 32 valid bits, left-aligned) by walking
// the tables as spec 3.3 says. Returns its length (1..32), or 0 if the tables do not lead to
// a symbol with a matching length within 4 levels (a caller's GroupInfo that does not belong
// to this group; a validated group never gets 0).
inline uint32_t decode_slow(const FastTable& t, uint64_t bits, uint8_t* exponent) {
  uint32_t row = 0;
  for (uint32_t level = 0; level < kMaxCodeLength / 8; ++level) {
    const uint32_t entry = t.luts[row * kLutRowSize + ((bits << (8 * level)) >> 56)];
    if (entry < kFirstPointerEntry) {
      const uint32_t len = t.lengths[entry];
      if (len <= 8 * level || len > 8 * level + 8) return 0;
      *exponent = static_cast<uint8_t>(entry);
      return len;
    }
    row = kLutRowSize - entry;
    if (row >= t.n_luts - 1) return 0;
  }
  return 0;
}

}  // namespace df11::detail
