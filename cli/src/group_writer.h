// Pass 2 of compression for one coded group: encodes it step by step (a bounded number of
// weights at a time) straight into its place in the output shard, hashing the original
// members and the stored tensors on the way, and dropping input and scratch pages after each
// step so that resident memory stays near the step size whatever the group size.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "console.h"
#include "df11/encoder.h"
#include "df11/file_io.h"
#include "file_writer.h"
#include "df11/metadata.h"
#include "member_spans.h"

namespace df11::app {

// Where a member's bytes lie in its input mapping (to drop its pages once encoded).
struct MemberSource {
  const MappedFile* file = nullptr;
  uint64_t offset = 0;  // absolute file offset of the tensor's first byte
};

// Absolute offsets of the six stored tensors in the output file, in spec order (luts,
// encoded_exponent, sign_mantissa, output_positions, gaps, split_positions).
using StoredOffsets = std::array<uint64_t, 6>;

struct GroupWriteResult {
  StoredChecksums stored;
  std::vector<std::string> member_xxh3;  // of the original member bytes
  uint32_t max_block_weights = 0;
};

// The stored tensors' byte sizes for a plan, in spec order.
std::array<uint64_t, 6> stored_sizes(const GroupPlan& plan);

// Encodes `members` with `plan` into `out` at `offsets`, `step_weights` weights per step.
// Progress advances by the members' BF16 bytes. `what` names the group in messages.
Result<GroupWriteResult> write_group(const MemberSpans& members,
                                     const std::vector<MemberSource>& sources,
                                     const GroupPlan& plan, const FileWriter& out,
                                     const StoredOffsets& offsets, uint64_t step_weights,
                                     Console& console, const std::string& what);

}  // namespace df11::app
