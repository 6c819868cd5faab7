// Pass 2 of compression for one coded group, a step (a bounded number of weights) at a time:
// encode_step() codes step k into a StepBuffer, which holds that step's stored stream and
// sign/mantissa bytes alone (encoder windows); write_step() writes the buffer into its place in the
// output shard, hashing the stored bytes beside the writes, and drops the step's input pages;
// finish() writes the small tensors. The caller (shard_writer.cpp) runs step k's encode beside step
// k - 1's write, with two buffers. The members' own checksums come from write_step too (beside
// the writes), or, with --source-sha256, from the source hasher, which reads every byte anyway.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "df11/encoder.h"
#include "df11/file_io.h"
#include "df11/group_schema.h"
#include "df11/hash.h"
#include "df11/member_spans.h"
#include "df11/metadata.h"
#include "file_writer.h"
#include "source_pages.h"

namespace df11::app {

// Absolute offsets of the six stored tensors in the output file, in kGroupTensors order
// (df11/group_schema.h).
using StoredOffsets = std::array<uint64_t, kGroupTensorCount>;

struct GroupWriteResult {
  StoredChecksums stored;
  uint32_t max_block_weights = 0;
  // With `hash_members`: each member's XXH3 (spec 5.2), in member order; else empty.
  std::vector<std::string> member_xxh3;
};

// One step's stored bytes. Reused from step to step: its memory is touched once.
struct StepBuffer {
  std::vector<uint8_t> stream;  // encoded_exponent bytes [first byte of the step's bits, ...)
  std::vector<uint8_t> sign;    // sign_mantissa of the step's weights
};

// The stored tensors' byte sizes for a plan, in kGroupTensors order.
std::array<uint64_t, kGroupTensorCount> stored_sizes(const GroupPlan& plan);

// Steps of `step_weights` weights (rounded to whole chunks, at least one) of a planned group.
uint64_t step_count(const GroupPlan& plan, uint64_t step_weights);

class GroupWriter {
 public:
  // `plan` must outlive the writer; `what` names the group in messages. `hash_members`: the
  // members' XXH3 are computed here, each step's weights by write_step while they are still
  // mapped (when no source hasher reads the files: compress without --source-sha256).
  GroupWriter(MemberSpans members, std::vector<MemberSource> sources, const GroupPlan& plan,
              const StoredOffsets& offsets, uint64_t step_weights, std::string what,
              bool hash_members);
  GroupWriter(const GroupWriter&) = delete;  // pages_ refers to members_
  GroupWriter& operator=(const GroupWriter&) = delete;

  uint64_t steps() const { return steps_; }
  // BF16 bytes of step k's weights (progress).
  uint64_t step_input_bytes(uint64_t k) const;

  // Codes step k into `buffer`. Steps go in order: step k's first stream byte starts with
  // the bits step k - 1 left in its last one. May run beside write_step(k - 1) (another
  // buffer), never beside another encode_step.
  Status encode_step(uint64_t k, StepBuffer& buffer);
  // Writes step k (encoded into `buffer`) at its place in `out`: the stream bytes final
  // after it (all up to the byte holding step k + 1's first bit; the last step, all), and its
  // sign/mantissa bytes; with `hash_members`, hashes the step's weights. Then drops the step's
  // input pages. Steps go in order.
  Status write_step(uint64_t k, const StepBuffer& buffer, const FileWriter& out);
  // After the last write_step: the luts, output positions, gaps and split positions, and
  // every checksum. Drops what is left of the members' input pages.
  Result<GroupWriteResult> finish(const FileWriter& out);

  const std::string& what() const { return what_; }

 private:
  struct Step {
    uint64_t c0, c1, w0, w1;  // chunks [c0, c1), weights [w0, w1)
  };
  Step step(uint64_t k) const;
  // Writes stored tensor t's bytes at `at`; emit() hashes them too.
  Status write(const FileWriter& out, GroupTensor t, uint64_t at,
               std::span<const uint8_t> bytes) const;
  Status emit(const FileWriter& out, GroupTensor t, uint64_t at, std::span<const uint8_t> bytes);

  MemberSpans members_;
  SourcePages pages_;
  const GroupPlan& plan_;
  StoredOffsets offsets_;
  std::string what_;
  uint64_t chunks_per_step_;
  uint64_t steps_;
  std::vector<uint8_t> positions_;  // whole: ~0.1% of the stream
  std::vector<uint8_t> gaps_;       // whole: ~8% of the stream
  std::array<Xxh3, kGroupTensorCount> stored_hash_;
  std::vector<Xxh3> member_hash_;  // per member with hash_members, else empty
  uint32_t most_ = 0;              // weights per block, the largest so far
  uint8_t carry_ = 0;              // the last stream byte of the last step encoded
  uint64_t stream_done_ = 0;       // stream bytes written
};

}  // namespace df11::app
