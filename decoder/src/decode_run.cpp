#include "decode_run.h"

#include "bit_window.h"

namespace df11::detail {
namespace {

// One 8-byte load gives at least 57 valid bits; codes found in the root row have at most 8
// bits, so 7 of them fit (the 7th is peeked at bit <= 48 and needs bits up to 56).
constexpr uint32_t kCodesPerLoad = 7;

}  // namespace

CodeRun decode_run(const FastTable& table, const uint8_t* stream, uint64_t n_bytes,
                   uint64_t start, uint32_t count, uint8_t* exponents) {
  const uint16_t* root = table.root.data();
  uint8_t* out = exponents;
  uint8_t* const end = exponents + count;
  uint64_t pos = start;
  CodeRun run;

  // Bulk: leaves at least one code for the tail loop, which records the last code's start.
  while (static_cast<uint64_t>(end - out) > kCodesPerLoad) {
    uint64_t bits = peek_bits(stream, n_bytes, pos);
    uint32_t used = 0;
    uint32_t k = 0;
#pragma GCC unroll 7
    for (; k < kCodesPerLoad; ++k) {
      const uint32_t e = root[bits >> 56];
      if (e == 0) break;  // longer code: slow path below
      out[k] = static_cast<uint8_t>(e);
      const uint32_t len = e >> 8;
      bits <<= len;
      used += len;
    }
    out += k;
    pos += used;
    if (k < kCodesPerLoad) {
      const uint32_t len = decode_slow(table, peek_bits(stream, n_bytes, pos), out, &run.fault);
      if (len == 0) {
        run.end_bit = pos;
        return run;
      }
      ++out;
      pos += len;
    }
  }
  while (out < end) {
    run.last_start = pos;
    const uint64_t bits = peek_bits(stream, n_bytes, pos);
    const uint32_t e = root[bits >> 56];
    uint32_t len;
    if (e != 0) {
      *out = static_cast<uint8_t>(e);
      len = e >> 8;
    } else {
      len = decode_slow(table, bits, out, &run.fault);
      if (len == 0) {
        run.end_bit = pos;
        return run;
      }
    }
    ++out;
    pos += len;
  }
  run.end_bit = pos;
  run.ok = true;
  return run;
}

}  // namespace df11::detail
