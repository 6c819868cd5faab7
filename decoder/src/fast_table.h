// Lookup table of the fast decoder: the root LUT row joined with the code-lengths row
// (spec 3.3), so that the common case, a code of at most 8 bits, costs one load.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "df11/group.h"

namespace df11::detail {

// The multi-code table: per value of the next kMultiBits stream bits, every whole code that
// lies inside them, up to kMultiCodes. One entry:
//   bits 0..39   the exponents, one byte each, in stream order (unused bytes are 0)
//   bits 40..51  the code starts: bit 51 - u is set when a code starts u bits in
//   bits 52..54  how many codes (0..kMultiCodes)
//   bits 56..59  how many bits they take (0: the first code needs decode_one())
inline constexpr uint32_t kMultiBits = 12;
inline constexpr uint32_t kMultiCodes = 5;

struct FastTable {
  // Per value of the next 8 stream bits: (code length << 8) | exponent for a usable root
  // symbol (1..8 bits); 0 sends that code to decode_slow() (pointers, unusable entries).
  std::array<uint16_t, kLutRowSize> root{};
  // Empty when the group's tables are not uniform (see make_fast_table) or the group is too
  // small to repay building it: the decoder then takes one code per lookup.
  std::vector<uint64_t> multi;
  const uint8_t* luts = nullptr;     // the group's rows, for codes of more than 8 bits
  const uint8_t* lengths = nullptr;  // the last row: code length of each exponent
  uint32_t n_luts = 0;
  std::array<int8_t, kMaxLutRows> depth{};  // GroupInfo::lut_row_depth
};

// `group.luts` must hold 2..kMaxLutRows whole rows (validate_group() checks it).
FastTable make_fast_table(const GroupView& group, const GroupInfo& info);

// Groups with fewer weights decode with the root table alone: building the multi-code
// table (4096 entries) costs about as much as decoding this many weights with it.
inline constexpr uint64_t kMultiMinElements = uint64_t{1} << 16;

// Where decode_slow() stopped: the entry no valid code uses.
struct LutFault {
  uint32_t row = 0;
  uint32_t index = 0;
  uint32_t entry = 0;
};

// Decodes the code at the top of `bits` (at least 32 valid bits, left-aligned) by walking
// the tables as spec 3.3 says. Returns its length (1..32), or 0 if the walk reaches an
// unusable entry (a pointer that does not lead one level down, or a symbol whose length
// does not fit its level), described in `fault`.
inline uint32_t decode_slow(const FastTable& t, uint64_t bits, uint8_t* exponent, LutFault* fault) {
  uint32_t row = 0;
  for (uint32_t level = 0; level < kMaxCodeLength / 8; ++level) {
    const uint32_t index = static_cast<uint32_t>((bits << (8 * level)) >> 56);
    const uint32_t entry = t.luts[row * kLutRowSize + index];
    *fault = LutFault{row, index, entry};
    if (entry < kFirstPointerEntry) {
      const uint32_t len = t.lengths[entry];
      if (len <= 8 * level || len > 8 * level + 8) return 0;
      *exponent = static_cast<uint8_t>(entry);
      return len;
    }
    const uint32_t target = kLutRowSize - entry;
    // The bound keeps a GroupInfo of another group from sending the walk out of the table.
    if (target >= t.n_luts - 1 || t.depth[target] != static_cast<int>(level) + 1) return 0;
    row = target;
  }
  return 0;
}

}  // namespace df11::detail
