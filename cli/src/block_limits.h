// The official loader's shared-memory limit (spec 3.7, kMaxWeightsPerBlockCompat), checked
// before any byte is written: the compressor lays out every shard's header in pass 1, so a
// group that would break the limit must be known to stay raw before encoding starts.
#pragma once

#include <cstdint>

#include "df11/encoder.h"
#include "member_spans.h"

namespace df11::app {

// The largest number of codes that start in one 32768-bit block of the group's stream (what
// encode_group_range reports as max_block_weights), computed from the plan's code lengths.
// Cheap bound first: with a shortest code of L bits a block holds at most ceil(32768 / L)
// starts, which is below the limit for L >= 2; only groups with a 1-bit code (one exponent
// covering a large share of the weights) are scanned, in parallel by chunk.
uint64_t max_block_weights(const MemberSpans& members, const GroupPlan& plan);

}  // namespace df11::app
