#include "compress_plan.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string_view>
#include <utility>

#include "df11/block_limits.h"
#include "df11/byte_units.h"
#include "df11/count_text.h"
#include "df11/group.h"
#include "df11/tied_head.h"

namespace df11::app {
namespace {

// The official loader fills one nn.Linear per expert ("mlp.experts.3.gate_proj"), which
// transformers 4 builds; transformers 5 fuses a layer's experts into 3-D parameters, and the
// loader cannot load such a model (measured: tests/interop/README.md). The output is right
// either way; the user should know which transformers the official loader needs.
bool is_per_expert_path(const std::string& path) {
  static constexpr std::string_view kExperts = "experts.";
  for (size_t at = path.find(kExperts); at != std::string::npos; at = path.find(kExperts, at + 1)) {
    const size_t digit = at + kExperts.size();
    if ((at == 0 || path[at - 1] == '.') && digit < path.size() && path[digit] >= '0' &&
        path[digit] <= '9') {
      return true;
    }
  }
  return false;
}

std::string per_expert_note(const Grouping& grouping) {
  for (const GroupSpec& g : grouping.groups) {
    bool per_expert = is_per_expert_path(g.name + ".");
    for (const std::string& m : g.member_modules) per_expert = per_expert || is_per_expert_path(m);
    if (per_expert) {
      return "MoE experts are coded per expert (group '" + g.name +
             "'): the official dfloat11 loader fills one nn.Linear per expert, which "
             "transformers 4 builds; under transformers 5 (fused experts) it cannot load MoE "
             "models, the official ones included";
    }
  }
  return {};
}

uint64_t member_bytes(const CheckpointSource& source, const CompressPlan& plan,
                      const GroupSpec& group) {
  uint64_t bytes = 0;
  for (size_t m : group.members) bytes += source.tensor(plan.order[m]).byte_size();
  return bytes;
}

// Releases a group's members (CheckpointSource::release) when it goes out of scope.
class MembersHeld {
 public:
  MembersHeld(const CheckpointSource& source, const CompressPlan& plan, const GroupSpec& group,
              PhaseTimes* phases)
      : source_(source), phases_(phases) {
    for (size_t m : group.members) members_.push_back(plan.order[m]);
  }
  MembersHeld(const MembersHeld&) = delete;
  MembersHeld& operator=(const MembersHeld&) = delete;
  ~MembersHeld() {
    const PhaseTimer releasing(phases_, "  planning: release input pages");
    for (const TensorLocation& at : members_) source_.release(at);
  }

 private:
  const CheckpointSource& source_;
  PhaseTimes* phases_;
  std::vector<TensorLocation> members_;
};

std::string member_list(const CheckpointSource& source, const CompressPlan& plan,
                        const GroupSpec& group) {
  std::string list;
  for (size_t m : group.members) {
    list += (list.empty() ? "'" : ", '") + source.tensor(plan.order[m]).name + "'";
  }
  return list;
}

// Which members hold exponents the code cannot represent (spec 3.3: values >= 240): their
// positions in the group and the number of such weights in each.
std::vector<std::pair<size_t, uint64_t>> uncodable_members(const MemberSpans& spans) {
  std::vector<std::pair<size_t, uint64_t>> bad_members;
  for (size_t k = 0; k < spans.size(); ++k) {
    const Histogram hist = exponent_histogram(spans.spans()[k]);
    uint64_t bad = 0;
    for (uint32_t e = kMaxCodableExponent + 1; e < 256; ++e) bad += hist[e];
    if (bad != 0) bad_members.emplace_back(k, bad);
  }
  return bad_members;
}

// The members' list for a message, with their counts of uncodable weights.
std::string uncodable_list(const CheckpointSource& source, const CompressPlan& plan,
                           const GroupSpec& group,
                           const std::vector<std::pair<size_t, uint64_t>>& bad_members) {
  std::string list;
  for (const auto& [k, bad] : bad_members) {
    list += (list.empty() ? "" : ", ") + std::string("'") +
            source.tensor(plan.order[group.members[k]]).name + "' (" + std::to_string(bad) +
            (bad == 1 ? " weight)" : " weights)");
  }
  return list;
}

// spec 7.4: the group without the members at `drop` (sorted positions).
GroupSpec without_members(const GroupSpec& group,
                          const std::vector<std::pair<size_t, uint64_t>>& drop) {
  GroupSpec rest = group;
  rest.members.clear();
  rest.member_modules.clear();
  size_t d = 0;
  for (size_t k = 0; k < group.members.size(); ++k) {
    if (d < drop.size() && drop[d].first == k) {
      ++d;
      continue;
    }
    rest.members.push_back(group.members[k]);
    if (k < group.member_modules.size()) rest.member_modules.push_back(group.member_modules[k]);
  }
  return rest;
}

// spec 7.4 / issue "no silent nothing compressed": below this share of the BF16 2-D weight
// bytes coded, compress says which tensors stayed raw and why.
constexpr double kLowCoverageShare = 0.90;

// Why a tensor stayed raw (the coverage warning names it, and says what to do about it).
constexpr const char* kReasonValues = "holds Inf, NaN or |x| >= 2^113";
constexpr const char* kReasonLimit = "its group is above a loader limit";

std::string coverage_warning(const CheckpointSource& source, const CompressPlan& plan,
                             const std::vector<std::string>& reasons) {
  struct Uncoded {
    uint64_t bytes;
    size_t index;
  };
  std::vector<Uncoded> uncoded;
  for (size_t i = 0; i < plan.order.size(); ++i) {
    const TensorInfo& t = source.tensor(plan.order[i]);
    if (plan.raw[i] && t.dtype == Dtype::kBF16 && t.shape.size() == 2 && t.n_elements > 0) {
      uncoded.push_back({t.byte_size(), i});
    }
  }
  std::stable_sort(uncoded.begin(), uncoded.end(),
                   [](const Uncoded& a, const Uncoded& b) { return a.bytes > b.bytes; });
  char share[32];
  std::snprintf(share, sizeof share, "%.1f%%",
                100.0 * static_cast<double>(plan.coded_weight_bytes) /
                    static_cast<double>(plan.bf16_matrix_bytes));
  std::string line = "only " + std::string(share) + " of the BF16 2-D weight bytes are coded (" +
                     format_bytes(plan.coded_weight_bytes) + " of " +
                     format_bytes(plan.bf16_matrix_bytes) + "); largest uncoded:";
  // What to do about it, for each kind of reason among the tensors named.
  bool limits = false, values = false, layout = false;
  for (size_t k = 0; k < uncoded.size() && k < 5; ++k) {
    const size_t i = uncoded[k].index;
    const std::string& why = reasons[i];
    if (why == kReasonLimit) {
      limits = true;
    } else if (why == kReasonValues) {
      values = true;
    } else {
      layout = true;
    }
    line += (k ? "; '" : " '") + source.tensor(plan.order[i]).name + "' (" +
            format_bytes(uncoded[k].bytes) + ": " + why + ")";
  }
  if (values) {
    line +=
        "; Inf and NaN have no exponent code in DF11: such tensors are stored unchanged, "
        "losslessly";
  }
  if (limits) line += "; --group-by tensor makes smaller groups";
  if (layout) line += "; rename tensors to '<module>.weight' or report the layout to df11";
  return line;
}

}  // namespace

std::string group_context(const CheckpointSource& source, const CompressPlan& plan,
                          const GroupSpec& group) {
  return source.shard_name(plan.order[group.members.front()].shard) + ": group '" + group.name +
         "'";
}

Result<MemberSpans> group_member_spans(const CheckpointSource& source, const CompressPlan& plan,
                                       const GroupSpec& group) {
  std::vector<std::span<const uint8_t>> bytes;
  bytes.reserve(group.members.size());
  for (size_t m : group.members) {
    const TensorLocation& at = plan.order[m];
    DF11_ASSIGN_OR_RETURN(std::span<const uint8_t> member, source.tensor_bytes(at));
    bytes.push_back(member);
  }
  return MemberSpans::make(bytes);
}

std::vector<MemberSource> group_sources(const CheckpointSource& source, const CompressPlan& plan,
                                        const GroupSpec& group) {
  std::vector<MemberSource> sources;
  sources.reserve(group.members.size());
  for (size_t m : group.members) {
    const TensorLocation& at = plan.order[m];
    sources.push_back(source.member_source(at));
  }
  return sources;
}

Grouping group_tensors(std::span<const TensorEntry> entries,
                       const std::optional<std::string>& config_text, GroupBy group_by) {
  Grouping grouping = derive_groups(entries, group_by);
  if (config_text) {
    if (const auto embedding = find_tied_embedding(entries, *config_text)) {
      add_tied_head(grouping, entries, *embedding);
    }
  }
  return grouping;
}

Result<CompressPlan> plan_compression(const CheckpointSource& source, GroupBy group_by,
                                      Reporter& reporter, const CancelToken& cancel,
                                      uint64_t chunk_weights, PhaseTimes* phases) {
  CompressPlan result;
  result.order = source.tensors_in_file_order();
  std::vector<TensorEntry> entries;
  entries.reserve(result.order.size());
  for (const TensorLocation& at : result.order) {
    const TensorInfo& t = source.tensor(at);
    entries.push_back(TensorEntry{t.name, t.dtype, t.shape, t.n_elements});
  }
  Grouping grouping = group_tensors(entries, source.config_text(), group_by);
  for (const std::string& note : grouping.notes) reporter.warning(note);
  if (const std::string moe = per_expert_note(grouping); !moe.empty()) reporter.note(moe);
  result.raw.assign(result.order.size(), false);
  for (size_t i : grouping.raw) result.raw[i] = true;

  // Why each tensor stays raw, for the coverage warning.
  std::vector<std::string> reasons(result.order.size(), "not grouped");
  for (size_t i : grouping.raw) {
    const TensorInfo& t = source.tensor(result.order[i]);
    if (!t.name.ends_with(".weight")) reasons[i] = "not named '<module>.weight'";
  }
  for (size_t i = 0; i < result.order.size(); ++i) {
    const TensorInfo& t = source.tensor(result.order[i]);
    if (t.dtype == Dtype::kBF16 && t.shape.size() == 2 && t.n_elements > 0) {
      result.bf16_matrix_bytes += t.byte_size();
    }
  }

  uint64_t total = 0;
  for (const GroupSpec& g : grouping.groups) total += member_bytes(source, result, g);
  reporter.progress_start("planning   ", total);
  std::vector<bool> coded;
  for (GroupSpec& spec : grouping.groups) {
    DF11_RETURN_IF_ERROR(cancel.check());
    PlannedGroup group;
    group.spec = std::move(spec);
    group.shard = result.order[group.spec.members.front()].shard;
    const uint64_t group_bytes = member_bytes(source, result, group.spec);
    std::string incompatible;
    for (;;) {
      // spec 3.7: a group the loader cannot take is stored unchanged; the element count is
      // known before any weight is read, the stream's blocks after planning.
      CompatSizes sizes;
      for (size_t m : group.spec.members) {
        sizes.n_elements += source.tensor(result.order[m]).n_elements;
      }
      incompatible = compat_violation(sizes);
      if (!incompatible.empty()) break;
      DF11_ASSIGN_OR_RETURN(MemberSpans spans, group_member_spans(source, result, group.spec));
      // The members' bytes are held until this attempt ends (the spans die with it); then
      // what the workers left is dropped: pages at chunk seams and the kernel's fault-around
      // pages, or what a source staged.
      const MembersHeld held(source, result, group.spec, phases);
      std::optional<PhaseTimer> histogram(std::in_place, phases, "  plan_group");
      // Each worker drops the pages of the chunk it has counted, so that the group's pages
      // are not all resident at once, nor all dropped on one thread afterwards.
      const SourcePages pages(spans.stream(), group_sources(source, result, group.spec));
      auto plan = plan_group(
          spans.spans(), chunk_weights,
          [&](uint64_t begin, uint64_t end) { pages.drop(begin, end, /*whole_pages_only=*/true); },
          [&](uint64_t begin, uint64_t end) { pages.populate(begin, end); });
      histogram.reset();
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
          if (group.spec.alias_name.empty()) {
            result.coded_weight_bytes += member_bytes(source, result, group.spec);
          }
        }
        break;
      }
      if (plan.status().code() != ErrorCode::kUncodable) {
        return plan.status().with_context(group_context(source, result, group.spec));
      }
      const auto bad_members = uncodable_members(spans);
      const std::string list = uncodable_list(source, result, group.spec, bad_members);
      for (const auto& [k, bad] : bad_members) {
        reasons[group.spec.members[k]] = kReasonValues;
      }
      if (bad_members.empty() || bad_members.size() == group.spec.members.size()) {
        reporter.warning(group_context(source, result, group.spec) +
                         ": stored unchanged: Inf, NaN or |x| >= 2^113 cannot be coded, in " +
                         list);
        break;
      }
      // spec 7.4: the tensors that cannot be coded leave the group, the rest is coded.
      uint64_t dropped = 0;
      for (const auto& [k, bad] : bad_members) {
        const size_t m = group.spec.members[k];
        dropped += source.tensor(result.order[m]).byte_size();
        result.raw[m] = true;
      }
      reporter.warning(
          group_context(source, result, group.spec) + ": " + list +
          " hold Inf, NaN or |x| >= 2^113, which cannot be coded: stored unchanged on " +
          "their own (" + format_bytes(dropped) + " uncoded); the group's other " +
          count_of(group.spec.members.size() - bad_members.size(), "tensor") + " coded");
      group.spec = without_members(group.spec, bad_members);
    }
    if (!incompatible.empty()) {
      reporter.warning(group_context(source, result, group.spec) + ": stored unchanged: " +
                       incompatible + "; tensors " + member_list(source, result, group.spec));
      for (size_t m : group.spec.members) reasons[m] = kReasonLimit;
    }
    // A tied copy that stays uncoded is simply not written: its tensor is stored by its own
    // group or raw.
    if (!group.coded && group.spec.alias_name.empty()) {
      for (size_t m : group.spec.members) result.raw[m] = true;
    }
    reporter.progress_advance(group_bytes);
    coded.push_back(group.coded);
    result.groups.push_back(std::move(group));
  }
  reporter.progress_finish();
  if (result.bf16_matrix_bytes != 0 &&
      static_cast<double>(result.coded_weight_bytes) <
          kLowCoverageShare * static_cast<double>(result.bf16_matrix_bytes)) {
    reporter.warning(coverage_warning(source, result, reasons));
  }

  std::vector<GroupSpec> specs;
  specs.reserve(result.groups.size());
  for (const PlannedGroup& g : result.groups) specs.push_back(g.spec);
  result.pattern_dict = derive_pattern_dict(specs, coded);
  return result;
}

}  // namespace df11::app
