#include "fast_table.h"

#include <algorithm>

namespace df11::detail {
namespace {

// The multi-code table decodes the codes of a kMultiBits window as if the stream's bits
// after the window were zero. A code's walk reads whole 8-bit indices (spec 3.3), at its
// last level the bits past the code too, so the window gives the real bits' exponents and
// lengths only if every entry that decodes a code of k bits at its level fills all
// 2^(8 - k) indices that share those k bits. A Huffman coder's tables always do; tables
// that do not (corrupt or hostile) decode one code per lookup, as the reference decoder
// walks them, so that their errors are found and worded as before.
bool rows_are_uniform(const FastTable& t) {
  for (uint32_t row = 0; row + 1 < t.n_luts; ++row) {
    const int depth = t.depth[row];
    if (depth < 0) continue;  // no walk reaches it
    const uint8_t* entries = t.luts + uint64_t{row} * kLutRowSize;
    const uint32_t level_bits = 8 * static_cast<uint32_t>(depth);
    // A code's indices are one aligned run of 2^spare: visiting each run from its start
    // and stepping over it, any code entry met elsewhere breaks a run.
    for (uint32_t i = 0; i < kLutRowSize;) {
      const uint32_t entry = entries[i];
      const uint32_t len = entry < kFirstPointerEntry ? t.lengths[entry] : 0;
      if (len <= level_bits || len > level_bits + 8) {  // a pointer, or unusable here
        ++i;
        continue;
      }
      const uint32_t run = 1u << (8 - (len - level_bits));
      if (i % run != 0) return false;
      for (uint32_t j = i + 1; j < i + run; ++j) {
        if (entries[j] != entry) return false;
      }
      i += run;
    }
  }
  return true;
}

// The first code of every kMultiBits window (bits after it zero): (length << 8) | exponent,
// 0 where it reaches an unusable entry or is longer than the window.
std::vector<uint16_t> first_codes(const FastTable& t) {
  std::vector<uint16_t> first(size_t{1} << kMultiBits);
  for (uint32_t i = 0; i < first.size(); ++i) {
    const uint64_t bits = uint64_t{i} << (64 - kMultiBits);
    uint32_t e = t.root[bits >> 56];
    if (e == 0) {
      uint8_t exponent = 0;
      LutFault fault;
      const uint32_t len = decode_slow(t, bits, &exponent, &fault);
      if (len != 0 && len <= kMultiBits) e = (len << 8) | exponent;
    }
    first[i] = static_cast<uint16_t>(e);
  }
  return first;
}

// The window's whole codes, one after another: the code at bit u of the window is the
// first code of the window shifted left by u (zeros come in, as past the window).
uint64_t multi_entry(const std::vector<uint16_t>& first, uint32_t index) {
  constexpr uint32_t kMask = (1u << kMultiBits) - 1;
  uint64_t exponents = 0;
  uint64_t starts = 0;
  uint32_t used = 0;
  uint32_t n = 0;
  for (; n < kMultiCodes; ++n) {
    const uint32_t e = first[(index << used) & kMask];
    const uint32_t len = e >> 8;
    if (len == 0 || used + len > kMultiBits) break;
    exponents |= uint64_t{e & 0xFF} << (8 * n);
    starts |= uint64_t{1} << (kMultiBits - 1 - used);
    used += len;
  }
  return exponents | starts << 40 | uint64_t{n} << 52 | uint64_t{used} << 56;
}

bool worth_a_multi_table(const GroupInfo& info) {
#ifdef DF11_FUZZ_MULTI_TABLE_ON_ODD_SIZES
  if (info.n_elements % 2 == 1) return true;
#endif
  return info.n_elements >= kMultiMinElements;
}

}  // namespace

FastTable make_fast_table(const GroupView& group, const GroupInfo& info) {
  FastTable t;
  t.n_luts = group.n_luts();
  t.luts = group.luts.data();
  t.lengths = t.luts + uint64_t{t.n_luts - 1} * kLutRowSize;
  std::copy(std::begin(info.lut_row_depth), std::end(info.lut_row_depth), t.depth.begin());
  for (uint32_t i = 0; i < kLutRowSize; ++i) {
    const uint32_t entry = t.luts[i];
    if (entry >= kFirstPointerEntry) continue;
    const uint32_t len = t.lengths[entry];
    if (len >= 1 && len <= 8) t.root[i] = static_cast<uint16_t>((len << 8) | entry);
  }
  if (worth_a_multi_table(info) && rows_are_uniform(t)) {
    const std::vector<uint16_t> first = first_codes(t);
    t.multi.resize(first.size());
    for (uint32_t i = 0; i < t.multi.size(); ++i) t.multi[i] = multi_entry(first, i);
  }
  return t;
}

}  // namespace df11::detail
