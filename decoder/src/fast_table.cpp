#include "fast_table.h"

#include <algorithm>

namespace df11::detail {

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
  return t;
}

}  // namespace df11::detail
