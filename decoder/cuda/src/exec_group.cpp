// A DF11 group in device memory -> its members' execution-layout blobs
// (include/df11/cuda_exec.h): the group is decoded once into the workspace (group_scratch.h,
// shared with compact_group.cpp), then measured and packed as BF16 sources.
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "df11/cuda_exec.h"
#include "group_scratch.h"

namespace df11::cuda {
namespace detail {

Result<GroupScratch> group_scratch(uint64_t n_elements, std::span<const ExecShape> members,
                                   uint64_t transcode, const std::string& what) {
  uint64_t at = 0;
  for (const ExecShape& m : members) at += uint64_t{m.rows} * m.cols;
  if (at != n_elements || members.empty()) {
    return Status(ErrorCode::kInvalidArgument, what + ": the members' shapes hold " +
                                                   std::to_string(at) + " weights, the group " +
                                                   std::to_string(n_elements));
  }
  GroupScratch s;
  s.transcode = (s.weights + 2 * n_elements + 255) / 256 * 256;
  s.bytes = s.transcode + transcode;
  return s;
}

Status decode_group_to_scratch(const DeviceGroup& group, const GroupScratch& s, void* d_workspace,
                               size_t workspace_bytes, CUstream_st* stream,
                               const std::string& what) {
  if (d_workspace == nullptr || workspace_bytes < s.bytes ||
      reinterpret_cast<uintptr_t>(d_workspace) % 256 != 0) {
    return Status(ErrorCode::kInvalidArgument,
                  what + ": workspace of " + std::to_string(workspace_bytes) +
                      " bytes (256-byte aligned), the transcode needs " + std::to_string(s.bytes));
  }
  auto* ws = static_cast<uint8_t*>(d_workspace);
  DeviceGroup g = group;
  g.d_out = reinterpret_cast<uint16_t*>(ws + s.weights);
  DF11_ASSIGN_OR_RETURN(DecodePlan plan, make_decode_plan({&g, 1}, what));
  if (plan.workspace_bytes() > GroupScratch::kRecordBytes) {
    return Status(ErrorCode::kInternal, what + ": a one-group decode needs " +
                                            std::to_string(plan.workspace_bytes()) + " bytes");
  }
  DF11_RETURN_IF_ERROR(init_workspace(plan, ws, GroupScratch::kRecordBytes, stream));
  DF11_RETURN_IF_ERROR(launch_decode(plan, ws, GroupScratch::kRecordBytes, stream));
  return read_decode_status(plan, ws, stream);
}

}  // namespace detail

namespace {

// The members as sources over the group's weights at d_bf16.
std::vector<ExecSource> member_sources(std::span<const ExecShape> members, const uint16_t* d_bf16) {
  std::vector<ExecSource> out;
  uint64_t at = 0;
  for (const ExecShape& m : members) {
    out.push_back({d_bf16 == nullptr ? nullptr : d_bf16 + at, m.rows, m.cols});
    at += uint64_t{m.rows} * m.cols;
  }
  return out;
}

Result<detail::GroupScratch> group_layout(uint64_t n_elements, std::span<const ExecShape> members,
                                          const std::string& what) {
  // The shapes checked first: the transcode's size takes them as they come.
  DF11_RETURN_IF_ERROR(detail::group_scratch(n_elements, members, 0, what).status());
  DF11_ASSIGN_OR_RETURN(const size_t t,
                        exec_transcode_workspace_bytes(member_sources(members, nullptr)));
  return detail::group_scratch(n_elements, members, t, what);
}

}  // namespace

Result<size_t> exec_group_workspace_bytes(const GroupView& group,
                                          std::span<const ExecShape> members) {
  DF11_ASSIGN_OR_RETURN(const detail::GroupScratch w,
                        group_layout(group.n_elements(), members, "exec_group_workspace_bytes"));
  return static_cast<size_t>(w.bytes);
}

Status exec_measure_group(const DeviceGroup& group, std::span<const ExecShape> members,
                          void* d_workspace, size_t workspace_bytes, CUstream_st* stream,
                          std::span<ExecMeasure> out) {
  const std::string what = "exec_measure_group: " + group.name;
  DF11_ASSIGN_OR_RETURN(const detail::GroupScratch w,
                        group_layout(group.host.n_elements(), members, what));
  DF11_RETURN_IF_ERROR(
      detail::decode_group_to_scratch(group, w, d_workspace, workspace_bytes, stream, what));
  auto* ws = static_cast<uint8_t*>(d_workspace);
  return exec_measure(member_sources(members, reinterpret_cast<uint16_t*>(ws + w.weights)),
                      ws + w.transcode, workspace_bytes - w.transcode, stream, out)
      .with_context(group.name);
}

Status launch_exec_pack_group(std::span<const ExecShape> members, std::span<uint8_t* const> d_blobs,
                              void* d_workspace, size_t workspace_bytes, CUstream_st* stream) {
  uint64_t n = 0;
  for (const ExecShape& m : members) n += uint64_t{m.rows} * m.cols;
  DF11_ASSIGN_OR_RETURN(const detail::GroupScratch w,
                        group_layout(n, members, "launch_exec_pack_group"));
  if (d_workspace == nullptr || workspace_bytes < w.bytes) {
    return Status(ErrorCode::kInvalidArgument,
                  "launch_exec_pack_group: workspace of " + std::to_string(workspace_bytes) +
                      " bytes, the transcode needs " + std::to_string(w.bytes));
  }
  auto* ws = static_cast<uint8_t*>(d_workspace);
  return launch_exec_pack(member_sources(members, reinterpret_cast<uint16_t*>(ws + w.weights)),
                          d_blobs, ws + w.transcode, workspace_bytes - w.transcode, stream);
}

}  // namespace df11::cuda
