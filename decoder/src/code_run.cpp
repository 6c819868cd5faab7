#include "code_run.h"

#include <algorithm>

#include "bit_window.h"

namespace df11::detail {
namespace {

// One 8-byte load gives at least 57 valid bits; codes found in the root row have at most 8
// bits, so 7 of them fit (the 7th is peeked at bit <= 48 and needs bits up to 56).
constexpr uint32_t kCodesPerLoad = 7;
constexpr uint64_t kTopBit = uint64_t{1} << 63;

struct Stream {
  const uint8_t* data;
  uint64_t n_bytes;
};

// Sets the start bits `mask` (bit 63 = `at`) in the run's bitmap. Starts past the block
// land in the spill words.
inline void mark_starts(CodeRun& r, uint64_t at, uint64_t mask) {
  const uint64_t rel = at - r.base;
  const uint64_t word = std::min<uint64_t>(rel / 64, kWindowsPerBlock);
  const uint32_t off = static_cast<uint32_t>(rel % 64);
  r.starts[word] |= mask >> off;
  r.starts[word + 1] |= (mask << 1) << (63 - off);  // the part past the word (none if off 0)
}

// Decodes one code the careful way: root symbols directly, longer codes by walking the
// tables. Returns false (the run stops, r.pos at the code) on an unusable entry.
inline bool decode_one(const FastTable& t, const Stream& s, CodeRun& r) {
  const uint64_t bits = peek_bits(s.data, s.n_bytes, r.pos);
  mark_starts(r, r.pos, kTopBit);
  r.last_start = r.pos;
  const uint32_t e = t.root[bits >> 56];
  uint32_t len;
  if (e != 0) {
    *r.out = static_cast<uint8_t>(e);
    len = e >> 8;
  } else {
    len = decode_slow(t, bits, r.out, &r.fault);
    if (len == 0) return r.ok = false;
  }
  ++r.out;
  r.pos += len;
  return true;
}

// Up to kCodesPerLoad root codes from one load, then (if one was longer) that code alone.
// Leaves r.last_start stale: the tail (decode_one) sets it.
inline bool decode_group(const FastTable& t, const Stream& s, CodeRun& r) {
  uint64_t bits = peek_bits(s.data, s.n_bytes, r.pos);
  const uint16_t* root = t.root.data();
  uint32_t used = 0;
  uint64_t mask = 0;
  uint32_t k = 0;
#pragma GCC unroll 7
  for (; k < kCodesPerLoad; ++k) {
    const uint32_t e = root[bits >> 56];
    if (e == 0) break;  // a longer code: decode_one below
    r.out[k] = static_cast<uint8_t>(e);
    mask |= kTopBit >> used;
    const uint32_t len = e >> 8;
    bits <<= len;
    used += len;
  }
  mark_starts(r, r.pos, mask);
  r.out += k;
  r.pos += used;
  return k == kCodesPerLoad || decode_one(t, s, r);
}

// Bulk groups leave at least one code for the tail, which records the last code's start.
inline bool bulk_left(const CodeRun& r) {
  return r.ok && static_cast<uint64_t>(r.out_end - r.out) > kCodesPerLoad;
}

inline void finish(const FastTable& t, const Stream& s, CodeRun& r) {
  while (bulk_left(r)) decode_group(t, s, r);
  while (r.ok && r.out < r.out_end) decode_one(t, s, r);
}

}  // namespace

void decode_runs(const FastTable& table, const uint8_t* stream, uint64_t n_bytes, CodeRun& a) {
  finish(table, Stream{stream, n_bytes}, a);
}

void decode_runs(const FastTable& table, const uint8_t* stream, uint64_t n_bytes, CodeRun& a,
                 CodeRun& b) {
  const Stream s{stream, n_bytes};
  while (bulk_left(a) && bulk_left(b)) {
    decode_group(table, s, a);
    decode_group(table, s, b);
  }
  finish(table, s, a);
  finish(table, s, b);
}

}  // namespace df11::detail
