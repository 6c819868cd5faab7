// Pass 2 of compression for one coded group: encodes it step by step (a bounded number of
// weights at a time) straight into its place in the output shard, hashing the original
// members and the stored tensors on the way, and dropping input pages after each step. The
// coded stream and sign_mantissa bytes go through scratch memory kept from group to group
// (GroupScratch): at most 0.67 x the largest group's BF16 bytes.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cancel.h"
#include "df11/encoder.h"
#include "df11/file_io.h"
#include "df11/group_schema.h"
#include "df11/metadata.h"
#include "file_writer.h"
#include "lazy_buffer.h"
#include "member_spans.h"
#include "reporter.h"

namespace df11::app {

// Where a member's bytes lie in its input mapping (to drop its pages once encoded).
struct MemberSource {
  const MappedFile* file = nullptr;
  uint64_t offset = 0;  // absolute file offset of the tensor's first byte
};

// Absolute offsets of the six stored tensors in the output file, in kGroupTensors order
// (df11/group_schema.h).
using StoredOffsets = std::array<uint64_t, kGroupTensorCount>;

struct GroupWriteResult {
  StoredChecksums stored;
  std::vector<std::string> member_xxh3;  // of the original member bytes
  uint32_t max_block_weights = 0;
};

// Scratch memory for write_group(), reused by every group of a run. Fresh pages for each
// group cost page faults, zeroing and unmapping, a measurable share of compress's CPU time.
class GroupScratch {
 public:
  // The encoder's output buffers for `plan`: encoded_exponent zero-filled (chunks OR their
  // edge bytes into it), sign_mantissa with any contents (every byte is written), both of
  // exactly the plan's sizes. Grows the scratch when the plan needs more.
  Result<std::pair<std::span<uint8_t>, std::span<uint8_t>>> prepare(const GroupPlan& plan);

 private:
  LazyBuffer stream_;
  LazyBuffer sign_;
};

// The stored tensors' byte sizes for a plan, in kGroupTensors order.
std::array<uint64_t, kGroupTensorCount> stored_sizes(const GroupPlan& plan);

// Encodes `members` with `plan` into `out` at `offsets`, `step_weights` weights per step.
// Progress advances by the members' BF16 bytes. `what` names the group in messages.
Result<GroupWriteResult> write_group(const MemberSpans& members,
                                     const std::vector<MemberSource>& sources,
                                     const GroupPlan& plan, const FileWriter& out,
                                     const StoredOffsets& offsets, uint64_t step_weights,
                                     GroupScratch& scratch, Reporter& reporter,
                                     const CancelToken& cancel, const std::string& what);

}  // namespace df11::app
