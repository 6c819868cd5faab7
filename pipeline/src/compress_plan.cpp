#include "compress_plan.h"

#include <utility>

#include "block_limits.h"
#include "df11/group.h"

namespace df11::app {
namespace {

uint64_t member_bytes(const ModelFolder& folder, const CompressPlan& plan, const GroupSpec& group) {
  uint64_t bytes = 0;
  for (size_t m : group.members) bytes += folder.tensor(plan.order[m]).byte_size();
  return bytes;
}

void release_members(const ModelFolder& folder, const CompressPlan& plan, const GroupSpec& group) {
  for (size_t m : group.members) {
    const TensorLocation& at = plan.order[m];
    folder.shards[at.shard].release(folder.tensor(at));
  }
}

std::string member_list(const ModelFolder& folder, const CompressPlan& plan,
                        const GroupSpec& group) {
  std::string list;
  for (size_t m : group.members) {
    list += (list.empty() ? "'" : ", '") + folder.tensor(plan.order[m]).name + "'";
  }
  return list;
}

// Which members hold exponents the code cannot represent (spec 3.3: values >= 240).
std::string uncodable_members(const ModelFolder& folder, const CompressPlan& plan,
                              const GroupSpec& group, const MemberSpans& spans) {
  std::string list;
  for (size_t k = 0; k < spans.size(); ++k) {
    const Histogram hist = exponent_histogram(spans.spans()[k]);
    uint64_t bad = 0;
    for (uint32_t e = kMaxCodableExponent + 1; e < 256; ++e) bad += hist[e];
    if (bad == 0) continue;
    list += (list.empty() ? "" : ", ") + std::string("'") +
            folder.tensor(plan.order[group.members[k]]).name + "' (" + std::to_string(bad) +
            (bad == 1 ? " weight)" : " weights)");
  }
  return list;
}

}  // namespace

std::string group_context(const ModelFolder& folder, const CompressPlan& plan,
                          const GroupSpec& group) {
  return folder.shard_names[plan.order[group.members.front()].shard] + ": group '" + group.name +
         "'";
}

Result<MemberSpans> group_member_spans(const ModelFolder& folder, const CompressPlan& plan,
                                       const GroupSpec& group) {
  std::vector<std::span<const uint8_t>> bytes;
  bytes.reserve(group.members.size());
  for (size_t m : group.members) {
    const TensorLocation& at = plan.order[m];
    bytes.push_back(folder.shards[at.shard].tensor_bytes(folder.tensor(at)));
  }
  return MemberSpans::make(bytes);
}

Result<CompressPlan> plan_compression(const ModelFolder& folder, GroupBy group_by, Reporter& reporter, const CancelToken& cancel,
                                      uint64_t chunk_weights) {
  CompressPlan result;
  result.order = folder.tensors_in_file_order();
  std::vector<TensorEntry> entries;
  entries.reserve(result.order.size());
  for (const TensorLocation& at : result.order) {
    const TensorInfo& t = folder.tensor(at);
    entries.push_back(TensorEntry{t.name, t.dtype, t.shape, t.n_elements});
  }
  Grouping grouping = derive_groups(entries, group_by);
  for (const std::string& note : grouping.notes) reporter.warning(note);
  result.raw.assign(result.order.size(), false);
  for (size_t i : grouping.raw) result.raw[i] = true;

  uint64_t total = 0;
  for (const GroupSpec& g : grouping.groups) total += member_bytes(folder, result, g);
  reporter.progress_start("planning   ", total);
  std::vector<bool> coded;
  for (GroupSpec& spec : grouping.groups) {
    DF11_RETURN_IF_ERROR(cancel.check());
    PlannedGroup group;
    group.spec = std::move(spec);
    group.shard = result.order[group.spec.members.front()].shard;
    // spec 3.7: a group the loader cannot take is stored unchanged; the element count is
    // known before any weight is read, the stream's blocks after planning.
    CompatSizes sizes;
    for (size_t m : group.spec.members) sizes.n_elements += folder.tensor(result.order[m]).n_elements;
    std::string incompatible = compat_violation(sizes);
    if (incompatible.empty()) {
      DF11_ASSIGN_OR_RETURN(MemberSpans spans, group_member_spans(folder, result, group.spec));
      auto plan = plan_group(spans.spans(), chunk_weights);
      if (plan) {
        sizes.n_blocks = plan->n_blocks;
        incompatible = compat_violation(sizes);
        if (incompatible.empty()) {
          sizes.max_block_weights = max_block_weights(spans, *plan);
          incompatible = compat_violation(sizes);
        }
        if (incompatible.empty()) {
          group.coded = true;
          group.plan = std::move(plan).value();
          result.coded_weight_bytes += member_bytes(folder, result, group.spec);
        }
      } else if (plan.status().code() == ErrorCode::kUncodable) {
        reporter.warning(group_context(folder, result, group.spec) +
                     ": stored unchanged: Inf, NaN or |x| >= 2^113 cannot be coded, in " +
                     uncodable_members(folder, result, group.spec, spans));
      } else {
        return plan.status().with_context(group_context(folder, result, group.spec));
      }
    }
    if (!incompatible.empty()) {
      reporter.warning(group_context(folder, result, group.spec) + ": stored unchanged: " +
                   incompatible + "; tensors " + member_list(folder, result, group.spec));
    }
    release_members(folder, result, group.spec);
    if (!group.coded) {
      for (size_t m : group.spec.members) result.raw[m] = true;
    }
    reporter.progress_advance(member_bytes(folder, result, group.spec));
    coded.push_back(group.coded);
    result.groups.push_back(std::move(group));
  }
  reporter.progress_finish();

  std::vector<GroupSpec> specs;
  specs.reserve(result.groups.size());
  for (const PlannedGroup& g : result.groups) specs.push_back(g.spec);
  result.pattern_dict = derive_pattern_dict(specs, coded);
  return result;
}

}  // namespace df11::app
