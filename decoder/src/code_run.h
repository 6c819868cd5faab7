// The fast decoder's inner loop (spec 4.3): decoding consecutive codes from a start bit.
//
// A CodeRun is one block's codes. Two runs decode interleaved: each code's table lookup
// waits on the previous code's length, so one run alone leaves the core mostly idle; two
// independent runs fill it.
#pragma once

#include <cstdint>

#include "fast_table.h"

namespace df11::detail {

// Words of the code-start bitmap of one block: 512 windows plus two spill words for the
// starts that a count too large puts past the block's end (ignored).
inline constexpr uint32_t kStartWords = kWindowsPerBlock + 2;

struct CodeRun {
  // Input.
  uint64_t pos = 0;            // bit where the next code starts (absolute)
  uint8_t* out = nullptr;      // next exponent
  uint8_t* out_end = nullptr;  // one past the last exponent to decode
  uint64_t base = 0;           // the block's first bit: 32768 b
  uint64_t* starts = nullptr;  // kStartWords words, zeroed: bit 63 - (s % 64) of word
                               // (s - base) / 64 is set for each code start s
  // Result (pos is then the bit after the last code).
  uint64_t last_start = 0;  // the first bit of the last code decoded
  bool ok = true;           // false: the code at `pos` reaches an unusable entry (`fault`)
  LutFault fault;
};

// Decodes every code of each run. Reads only stream[0, n_bytes) (bits past the end read as
// zero: callers compare the end with where the stream ends).
void decode_runs(const FastTable& table, const uint8_t* stream, uint64_t n_bytes, CodeRun& a);
void decode_runs(const FastTable& table, const uint8_t* stream, uint64_t n_bytes, CodeRun& a,
                 CodeRun& b);

}  // namespace df11::detail
