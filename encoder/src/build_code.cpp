// build_code(): optimal length-limited, table-limited canonical code for a histogram
// (spec 2.3 canonical assignment, spec 2.4 limits; encoder/NOTES.md).
#include <algorithm>
#include <string>
#include <vector>

#include "df11/code_lengths.h"
#include "df11/encoder.h"

namespace df11 {
namespace {

// spec 2.3: codes are assigned in order of (length, exponent value); each code is the
// previous one plus one, shifted left by the difference in length. So shorter codes are
// numerically smaller prefixes and the code space is filled from 0 without holes.
void assign_canonical_bits(Code& code) {
  uint32_t count[kMaxCodeLength + 1] = {};
  for (uint32_t s = 0; s < 256; ++s) ++count[code.length[s]];
  count[0] = 0;
  uint64_t next[kMaxCodeLength + 2] = {};
  uint64_t value = 0;
  for (uint32_t l = 1; l <= kMaxCodeLength; ++l) {
    value = (value + count[l - 1]) << 1;
    next[l] = value;
  }
  code.max_length = 0;
  for (uint32_t s = 0; s < 256; ++s) {
    const uint32_t l = code.length[s];
    if (l == 0) continue;
    code.bits[s] = static_cast<uint32_t>(next[l]++);
    code.max_length = std::max(code.max_length, l);
  }
}

}  // namespace

Result<Code> build_code(const Histogram& hist, uint32_t max_length) {
  if (max_length < 1 || max_length > kMaxCodeLength) {
    return Status(ErrorCode::kInvalidArgument, "build_code: max_length " +
                                                   std::to_string(max_length) + " is outside 1.." +
                                                   std::to_string(kMaxCodeLength));
  }
  // spec 2.1: exponents 240..255 (|x| >= 2^113, Inf, NaN) have no code: a table entry >= 240
  // is a pointer, never a symbol.
  for (uint32_t e = kMaxCodableExponent + 1; e < 256; ++e) {
    if (hist[e] != 0) {
      return Status(ErrorCode::kUncodable,
                    "exponent " + std::to_string(e) + " occurs " + std::to_string(hist[e]) +
                        " times; exponents >= 240 (|x| >= 2^113, Inf, NaN) cannot be coded");
    }
  }
  std::vector<uint32_t> symbols;
  std::vector<uint64_t> weights;
  for (uint32_t e = 0; e <= kMaxCodableExponent; ++e) {
    if (hist[e] != 0) {
      symbols.push_back(e);
      weights.push_back(hist[e]);
    }
  }
  if (symbols.empty()) {
    return Status(ErrorCode::kInvalidArgument, "build_code: histogram is empty");
  }

  Code code;
  if (symbols.size() == 1) {
    // A one-symbol stream still needs one bit per weight: decoders advance by the length.
    code.length[symbols[0]] = 1;
  } else {
    DF11_ASSIGN_OR_RETURN(std::vector<uint8_t> lengths, package_merge_lengths(weights, max_length));
    const LutShape shape;  // spec 3.3: 8 index bits, Max_Subtables subtables
    if (count_subtables(lengths, shape) > shape.max_subtables) {
      // The best code under the length limit needs too many subtables; the DP finds the
      // best code under both limits (slower, hence only here).
      DF11_ASSIGN_OR_RETURN(lengths, lut_limited_lengths(weights, max_length, shape));
    }
    for (size_t i = 0; i < symbols.size(); ++i) code.length[symbols[i]] = lengths[i];
  }
  assign_canonical_bits(code);
  return code;
}

}  // namespace df11
