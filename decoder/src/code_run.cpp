#include "code_run.h"

#include <algorithm>
#include <bit>
#include <cstring>

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

// kMultiLookups multi-code lookups from one load (each needs kMultiBits valid bits, the last
// from bit <= 36), then (if one found no whole code) that code alone. Each lookup stores
// all kMultiCodes exponent bytes of its entry and advances by its count, so it writes up to
// kMultiOverrun bytes past the codes of the group.
constexpr uint32_t kMultiLookups = 4;
constexpr uint32_t kMultiOverrun = 8;
static_assert(kMultiLookups * kMultiBits <= 57, "one load holds every lookup's bits");

inline bool decode_group_multi(const FastTable& t, const Stream& s, CodeRun& r) {
  uint64_t bits = peek_bits(s.data, s.n_bytes, r.pos);
  const uint64_t* multi = t.multi.data();
  uint8_t* out = r.out;
  uint32_t used = 0;
  uint64_t mask = 0;
  uint32_t k = 0;
#pragma GCC unroll 4
  for (; k < kMultiLookups; ++k) {
    const uint64_t e = multi[bits >> (64 - kMultiBits)];
    const uint32_t len = static_cast<uint32_t>(e >> 56);
    if (len == 0) break;  // a code longer than the window: decode_one below
    // Exponent n is byte n of the entry's value, whatever the machine's byte order.
    const uint64_t bytes = std::endian::native == std::endian::little ? e : __builtin_bswap64(e);
    std::memcpy(out, &bytes, kMultiOverrun);
    out += (e >> 52) & 7;
    mask |= ((e >> 40) << (64 - kMultiBits)) >> used;
    bits <<= len;
    used += len;
  }
  mark_starts(r, r.pos, mask);
  r.out = out;
  r.pos += used;
  return k == kMultiLookups || decode_one(t, s, r);
}

// Bulk groups leave at least one code for the tail, which records the last code's start,
// and room for the multi-code lookups' overrun.
inline bool bulk_left(const CodeRun& r) {
  return r.ok && static_cast<uint64_t>(r.out_end - r.out) > kCodesPerLoad;
}
constexpr uint64_t kMultiGroupCodes = kMultiLookups * kMultiCodes + 1 + kMultiOverrun;
inline bool bulk_left_multi(const CodeRun& r) {
  return r.ok && static_cast<uint64_t>(r.out_end - r.out) > kMultiGroupCodes;
}

inline void finish(const FastTable& t, const Stream& s, CodeRun& r) {
  if (!t.multi.empty()) {
    while (bulk_left_multi(r)) decode_group_multi(t, s, r);
  }
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
  if (!table.multi.empty()) {
    while (bulk_left_multi(a) && bulk_left_multi(b)) {
      decode_group_multi(table, s, a);
      decode_group_multi(table, s, b);
    }
  }
  while (bulk_left(a) && bulk_left(b)) {
    decode_group(table, s, a);
    decode_group(table, s, b);
  }
  finish(table, s, a);
  finish(table, s, b);
}

}  // namespace df11::detail
