// The official loader's limits (spec 3.7: kMaxElementsCompat, kMaxBlocksCompat,
// kMaxWeightsPerBlockCompat), checked before any byte is written: the compressor lays out
// every shard's header in pass 1, so a group that would break one must be known to stay raw
// before encoding starts.
#pragma once

#include <cstdint>
#include <string>

#include "df11/encoder.h"
#include "df11/member_spans.h"

namespace df11::app {

// The largest number of codes that start in one 32768-bit block of the group's stream (what
// encode_group_range reports as max_block_weights), computed from the plan's code lengths.
// Cheap bound first: with a shortest code of L bits a block holds at most ceil(32768 / L)
// starts, which is below the limit for L >= 2; only groups with a 1-bit code (one exponent
// covering a large share of the weights) are scanned, in parallel by chunk.
uint64_t max_block_weights(const MemberSpans& members, const GroupPlan& plan);

// The cheap bound alone: ceil(32768 / shortest code length). What a prediction
// without the weights (remote inspect) can say about max_block_weights.
uint64_t block_starts_bound(const GroupPlan& plan);

// The sizes of a coded group that the dfloat11 loader's limits constrain (spec 3.7).
struct CompatSizes {
  uint64_t n_elements = 0;
  uint64_t n_blocks = 0;           // 0: not known yet (before planning)
  uint64_t max_block_weights = 0;  // 0: not known yet
};

// Why a group of these sizes must be stored unchanged rather than coded for the loader, as a
// phrase for the warning, or "" if it can be coded. Checks Max_Elements_Compat (the kernel
// takes n as int), Max_Blocks_Compat (its thread byte offsets are int) and
// Max_Weights_Per_Block_Compat (shared memory), in that order, so that a caller can ask with
// only the sizes it knows so far and skip the costlier work for a group that stays raw.
std::string compat_violation(const CompatSizes& sizes);

}  // namespace df11::app
