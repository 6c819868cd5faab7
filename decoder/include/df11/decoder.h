// CPU DF11 decoders (spec/DF11.md section 4).
//
// decode_group_reference(): written for clarity; decodes the stream sequentially from bit 0
// and checks every gap and output position against what it decodes (strict verification).
// decode_group(): fast; blocks decode independently from their output positions, in parallel
// on the caller's TBB arena. Both validate the group first (validate_group) and never read
// or write out of bounds, whatever the input.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "df11/group.h"
#include "df11/status.h"

namespace df11 {

// Decodes all n_elements BF16 patterns into `out` (size must equal n_elements).
// `what` names the group in error messages ("file.safetensors: group 'model.layers.3'").
Status decode_group_reference(const GroupView& group, std::span<uint16_t> out,
                              const std::string& what);

// Fast decode of elements [first, first + out.size()) — any element range; only the blocks
// that cover it are decoded. Verifies that every decoded block ends exactly where the next
// block's gap and output position say (kCorruptData otherwise). Pass the GroupInfo from
// validate_group() to skip revalidating on repeated calls.
Status decode_group(const GroupView& group, std::span<uint16_t> out, const std::string& what,
                    uint64_t first = 0, const GroupInfo* validated = nullptr);

}  // namespace df11
