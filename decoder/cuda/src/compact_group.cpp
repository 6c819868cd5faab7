// A DF11 group in device memory -> its members' compact-layout blobs (include/df11/cuda_compact.h):
// the group is decoded once into the workspace (group_scratch.h), then each member's exponents
// are counted, its code chosen by the caller, and it is measured and packed from there.
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "df11/cuda_compact.h"
#include "group_scratch.h"

namespace df11::cuda {
namespace {

// The group's layout: its weights, then the largest member's compact transcode workspace.
Result<detail::GroupScratch> compact_layout(uint64_t n_elements, std::span<const ExecShape> members,
                                            const std::string& what) {
  uint64_t t = 0;
  for (const ExecShape& m : members) {
    DF11_ASSIGN_OR_RETURN(const uint64_t b, compact_workspace_bytes(m.rows, m.cols));
    t = std::max(t, b);
  }
  return detail::group_scratch(n_elements, members, t, what);
}

}  // namespace

Result<size_t> compact_group_workspace_bytes(const GroupView& group,
                                             std::span<const ExecShape> members) {
  DF11_ASSIGN_OR_RETURN(
      const detail::GroupScratch w,
      compact_layout(group.n_elements(), members, "compact_group_workspace_bytes"));
  return static_cast<size_t>(w.bytes);
}

Result<std::vector<std::array<uint64_t, kCompactSymbols>>> compact_count_group(
    const DeviceGroup& group, std::span<const ExecShape> members, void* d_workspace,
    size_t workspace_bytes, CUstream_st* stream) {
  const std::string what = "compact_count_group: " + group.name;
  DF11_ASSIGN_OR_RETURN(const detail::GroupScratch w,
                        compact_layout(group.host.n_elements(), members, what));
  DF11_RETURN_IF_ERROR(
      detail::decode_group_to_scratch(group, w, d_workspace, workspace_bytes, stream, what));
  auto* ws = static_cast<uint8_t*>(d_workspace);
  const auto* weights = reinterpret_cast<const uint16_t*>(ws + w.weights);
  std::vector<std::array<uint64_t, kCompactSymbols>> counts;
  uint64_t at = 0;
  for (const ExecShape& m : members) {
    DF11_ASSIGN_OR_RETURN(auto c, compact_histogram(weights + at, m.rows, m.cols, ws + w.transcode,
                                                    workspace_bytes - w.transcode, stream));
    counts.push_back(c);
    at += uint64_t{m.rows} * m.cols;
  }
  return counts;
}

Result<std::vector<CompactPlan>> compact_plan_group(
    std::span<const ExecShape> members,
    std::span<const std::array<uint8_t, kCompactSymbols>> lengths, void* d_workspace,
    size_t workspace_bytes, CUstream_st* stream, const std::string& what) {
  if (lengths.size() != members.size()) {
    return Status(ErrorCode::kInvalidArgument, what + ": " + std::to_string(lengths.size()) +
                                                   " codes for " + std::to_string(members.size()) +
                                                   " members");
  }
  uint64_t n = 0;
  for (const ExecShape& m : members) n += uint64_t{m.rows} * m.cols;
  DF11_ASSIGN_OR_RETURN(const detail::GroupScratch w, compact_layout(n, members, what));
  if (d_workspace == nullptr || workspace_bytes < w.bytes) {
    return Status(ErrorCode::kInvalidArgument,
                  what + ": workspace of " + std::to_string(workspace_bytes) +
                      " bytes, the transcode needs " + std::to_string(w.bytes));
  }
  auto* ws = static_cast<uint8_t*>(d_workspace);
  const auto* weights = reinterpret_cast<const uint16_t*>(ws + w.weights);
  std::vector<CompactPlan> plans;
  uint64_t at = 0;
  for (size_t k = 0; k < members.size(); ++k) {
    const ExecShape& m = members[k];
    Result<CompactPlan> plan =
        compact_measure(weights + at, m.rows, m.cols, lengths[k], ws + w.transcode,
                        workspace_bytes - w.transcode, stream);
    if (!plan.is_ok()) return plan.status().with_context(what + ", member " + std::to_string(k));
    plans.push_back(std::move(*plan));
    at += uint64_t{m.rows} * m.cols;
  }
  return plans;
}

Result<std::vector<CompactPlan>> compact_measure_group(const DeviceGroup& group,
                                                       std::span<const ExecShape> members,
                                                       const CompactCodeChooser& choose,
                                                       void* d_workspace, size_t workspace_bytes,
                                                       CUstream_st* stream) {
  const std::string what = "compact_measure_group: " + group.name;
  if (!choose) return Status(ErrorCode::kInvalidArgument, what + ": no code chooser");
  DF11_ASSIGN_OR_RETURN(const auto counts,
                        compact_count_group(group, members, d_workspace, workspace_bytes, stream));
  std::vector<std::array<uint8_t, kCompactSymbols>> lengths;
  for (size_t k = 0; k < counts.size(); ++k) {
    Result<std::array<uint8_t, kCompactSymbols>> l = choose(counts[k]);
    if (!l.is_ok()) return l.status().with_context(what + ", member " + std::to_string(k));
    lengths.push_back(*l);
  }
  return compact_plan_group(members, lengths, d_workspace, workspace_bytes, stream, what);
}

Status launch_compact_pack_group(std::span<const CompactPlan> plans,
                                 std::span<uint8_t* const> d_blobs, void* d_workspace,
                                 size_t workspace_bytes, CUstream_st* stream) {
  const char* what = "launch_compact_pack_group";
  if (plans.size() != d_blobs.size()) {
    return Status(ErrorCode::kInvalidArgument, std::string(what) + ": " +
                                                   std::to_string(plans.size()) + " plans, " +
                                                   std::to_string(d_blobs.size()) + " blobs");
  }
  std::vector<ExecShape> members;
  uint64_t n = 0;
  for (const CompactPlan& p : plans) {
    members.push_back({p.rows, p.cols});
    n += uint64_t{p.rows} * p.cols;
  }
  DF11_ASSIGN_OR_RETURN(const detail::GroupScratch w, compact_layout(n, members, what));
  if (d_workspace == nullptr || workspace_bytes < w.bytes) {
    return Status(ErrorCode::kInvalidArgument,
                  std::string(what) + ": workspace of " + std::to_string(workspace_bytes) +
                      " bytes, the transcode needs " + std::to_string(w.bytes));
  }
  auto* ws = static_cast<uint8_t*>(d_workspace);
  const auto* weights = reinterpret_cast<const uint16_t*>(ws + w.weights);
  uint64_t at = 0;
  for (size_t k = 0; k < plans.size(); ++k) {
    DF11_RETURN_IF_ERROR(launch_compact_pack(weights + at, plans[k], d_blobs[k], ws + w.transcode,
                                             workspace_bytes - w.transcode, stream));
    at += uint64_t{plans[k].rows} * plans[k].cols;
  }
  return Status::ok();
}

}  // namespace df11::cuda
