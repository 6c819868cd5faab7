// Fuzz target: the compact layout's code lengths (choose_compact_lengths, which
// df11_tools_compact_lengths exports) for any exponent counts, 0 to 2^64 - 1 each. The input is
// read as pairs (exponent byte, then 8 little-endian bytes of count, the last ones zero-padded),
// later pairs adding to earlier ones with saturation. Every present exponent gets a codeword of
// 1..12 bits, an absent one none; the lengths form a prefix code the format accepts (Kraft sum at
// most 1); a lone exponent gets 1 bit, all 256 get 8; no exponent at all is kInvalidArgument;
// the answer does not depend on the call.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "df11/exec_compact.h"
#include "df11/exec_compact_encode.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::array<uint64_t, df11::kCompactSymbols> counts{};
  for (size_t at = 0; at < size; at += 9) {
    uint8_t bytes[8] = {};
    std::memcpy(bytes, data + at + 1, std::min<size_t>(8, size - at - 1));
    uint64_t c = 0;
    for (int i = 7; i >= 0; --i) c = c << 8 | bytes[i];
    uint64_t& slot = counts[data[at]];
    slot = c > UINT64_MAX - slot ? UINT64_MAX : slot + c;
  }
  size_t present = 0;
  for (const uint64_t c : counts) present += c != 0;
  const auto l = df11::choose_compact_lengths(counts);
  if (present == 0) {
    FUZZ_CHECK(!l.is_ok() && l.status().code() == df11::ErrorCode::kInvalidArgument);
    return 0;
  }
  FUZZ_CHECK(l.is_ok());
  uint64_t kraft = 0;
  for (size_t e = 0; e < df11::kCompactSymbols; ++e) {
    const uint8_t x = (*l)[e];
    FUZZ_CHECK((x != 0) == (counts[e] != 0));
    FUZZ_CHECK(x <= df11::kCompactMaxCodeBits);
    if (x != 0) kraft += uint64_t{1} << (df11::kCompactMaxCodeBits - x);
    if (present == 1 && x != 0) FUZZ_CHECK(x == 1);
    if (present == df11::kCompactSymbols) FUZZ_CHECK(x == 8);
  }
  FUZZ_CHECK(kraft <= uint64_t{1} << df11::kCompactMaxCodeBits);
  FUZZ_CHECK(df11::compact_code(*l, "fuzz").is_ok());
  const auto again = df11::choose_compact_lengths(counts);
  FUZZ_CHECK(again.is_ok() && *again == *l);
  return 0;
}
