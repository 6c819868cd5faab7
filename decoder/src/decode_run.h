// The fast decoder's inner loop: consecutive codes from one start bit (spec 4.3).
#pragma once

#include <cstdint>

#include "fast_table.h"

namespace df11::detail {

struct CodeRun {
  uint64_t end_bit = 0;     // the bit after the last code; on failure, where the failing
                            // code starts
  uint64_t last_start = 0;  // the first bit of the last code
  bool ok = false;          // false: a code reached an unusable LUT entry (`fault`)
  LutFault fault;
};

// Decodes `count` (>= 1) codes back to back from bit `start` of the stream into
// exponents[0, count). Reads only stream[0, n_bytes) (bits past the end read as zero: the
// caller compares end_bit with where the stream says the run ends).
CodeRun decode_run(const FastTable& table, const uint8_t* stream, uint64_t n_bytes,
                   uint64_t start, uint32_t count, uint8_t* exponents);

}  // namespace df11::detail
