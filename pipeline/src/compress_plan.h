// Pass 1 of compression: which tensors form groups, the code of every group (histograms
// only: cheap), and which groups cannot meet the format's limits and stay raw. After this
// every output size is known, so each shard's header can be laid out before data is written.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "checkpoint_source.h"
#include "df11/cancel.h"
#include "df11/encoder.h"
#include "df11/grouping.h"
#include "df11/member_spans.h"
#include "df11/reporter.h"
#include "phase_times.h"
#include "source_pages.h"

namespace df11::app {

struct PlannedGroup {
  GroupSpec spec;      // members index CompressPlan::order
  size_t shard = 0;    // output shard: the shard of the first member
  bool coded = false;  // false: stored unchanged (uncodable or over a limit)
  GroupPlan plan;      // valid when coded
};

struct CompressPlan {
  std::vector<TensorLocation> order;  // every tensor, in original file order
  std::vector<PlannedGroup> groups;
  std::vector<bool> raw;  // per `order` entry: stored unchanged
  nlohmann::ordered_json pattern_dict;
  uint64_t coded_weight_bytes = 0;  // BF16 bytes of the coded groups' members (no tied copy)
  uint64_t bf16_matrix_bytes = 0;   // bytes of every non-empty 2-D BF16 tensor
};

// The groups of a checkpoint from its tensors' names and shapes alone (`entries` in
// original file order), with the tied lm_head copy that config.json asks for: what
// plan_compression starts from, and what remote inspect predicts from.
Grouping group_tensors(std::span<const TensorEntry> entries,
                       const std::optional<std::string>& config_text, GroupBy group_by);

// Plans every group; warns on `reporter` for each group left raw, naming its tensors, for
// each tensor with Inf or NaN taken out of its group (spec 7.4), and when less than 90% of
// the BF16 2-D weight bytes are coded (naming the largest uncoded tensors and why).
// Progress counts the bytes of member tensors read. `chunk_weights`: see plan_group().
Result<CompressPlan> plan_compression(const CheckpointSource& source, GroupBy group_by,
                                      Reporter& reporter, const CancelToken& cancel,
                                      uint64_t chunk_weights = kDefaultChunkWeights,
                                      PhaseTimes* phases = nullptr);

// The members of a group as spans over the source's bytes (a folder's mappings), valid until
// the source releases them.
Result<MemberSpans> group_member_spans(const CheckpointSource& source, const CompressPlan& plan,
                                       const GroupSpec& group);

// Where each member of a group lies in its input mapping (to drop its pages once read; none
// for a source that is not mapped).
std::vector<MemberSource> group_sources(const CheckpointSource& source, const CompressPlan& plan,
                                        const GroupSpec& group);

// "model.safetensors: group 'model.layers.3'" for messages.
std::string group_context(const CheckpointSource& source, const CompressPlan& plan,
                          const GroupSpec& group);

}  // namespace df11::app
