// The reference decoder's loop (spec 4.2), startable at a block boundary.
//
// decode_group_reference() runs it from bit 0 over the whole group. decode_group() runs it
// over a block that its own checks rejected, so that both decoders report the same error,
// worded the same way (spec 4.5): the blocks before have passed, so the sequential decoder
// would arrive at that block's first code in the same state.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "df11/group.h"
#include "df11/status.h"

namespace df11::detail {

// The sequential decoder's state when code `index` starts at bit `pos` and output positions
// [0, block) have been checked.
struct ScanState {
  uint64_t pos = 0;
  uint64_t index = 0;
  uint64_t block = 0;
};

// Decodes codes from `from` on, checking every gap, output position and the stream's end
// as spec 4.2 says, and writes weight i to out[i - from.index] if `out` is not empty (it
// then holds n_elements - from.index weights). Returns OK early, unchecked further, at the
// first code that starts at or past `stop_bit`. `info` comes from validate_group(group).
Status reference_scan(const GroupView& group, const GroupInfo& info, const std::string& what,
                      ScanState from, uint64_t stop_bit, std::span<uint16_t> out);

}  // namespace df11::detail
