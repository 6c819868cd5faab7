// A DF11 group in device memory -> its members' execution-layout blobs
// (include/df11/cuda_exec.h): the group is decoded once into the workspace, then measured and
// packed as BF16 sources. Nothing but the workspace ever holds the group's BF16 weights.
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "df11/cuda_exec.h"

namespace df11::cuda {
namespace {

constexpr uint64_t kDecodeRecordBytes = 256;  // a one-group decode's records (24 bytes today)

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

// The members as sources over the scratch copy of the group at d_bf16.
Result<std::vector<ExecSource>> member_sources(uint64_t n_elements,
                                               std::span<const ExecShape> members,
                                               const uint16_t* d_bf16, const char* what) {
  std::vector<ExecSource> out;
  uint64_t at = 0;
  for (const ExecShape& m : members) {
    out.push_back({d_bf16 + at, m.rows, m.cols});
    at += uint64_t{m.rows} * m.cols;
  }
  if (at != n_elements || members.empty()) {
    return Status(ErrorCode::kInvalidArgument, std::string(what) + ": the members' shapes hold " +
                                                   std::to_string(at) + " weights, the group " +
                                                   std::to_string(n_elements));
  }
  return out;
}

struct GroupWorkspace {
  uint64_t scratch = kDecodeRecordBytes, transcode = 0, bytes = 0;
};

Result<GroupWorkspace> group_layout(uint64_t n_elements, std::span<const ExecShape> members,
                                    const char* what) {
  DF11_ASSIGN_OR_RETURN(const std::vector<ExecSource> sources,
                        member_sources(n_elements, members, nullptr, what));
  DF11_ASSIGN_OR_RETURN(const size_t t, exec_transcode_workspace_bytes(sources));
  GroupWorkspace w;
  w.transcode = round_up(w.scratch + 2 * n_elements, 256);
  w.bytes = w.transcode + t;
  return w;
}

}  // namespace

Result<size_t> exec_group_workspace_bytes(const GroupView& group,
                                          std::span<const ExecShape> members) {
  DF11_ASSIGN_OR_RETURN(const GroupWorkspace w,
                        group_layout(group.n_elements(), members, "exec_group_workspace_bytes"));
  return static_cast<size_t>(w.bytes);
}

Status exec_measure_group(const DeviceGroup& group, std::span<const ExecShape> members,
                          void* d_workspace, size_t workspace_bytes, CUstream_st* stream,
                          std::span<ExecMeasure> out) {
  const std::string what = "exec_measure_group: " + group.name;
  DF11_ASSIGN_OR_RETURN(const GroupWorkspace w,
                        group_layout(group.host.n_elements(), members, what.c_str()));
  if (d_workspace == nullptr || workspace_bytes < w.bytes ||
      reinterpret_cast<uintptr_t>(d_workspace) % 256 != 0) {
    return Status(ErrorCode::kInvalidArgument,
                  what + ": workspace of " + std::to_string(workspace_bytes) +
                      " bytes (256-byte aligned), the transcode needs " + std::to_string(w.bytes));
  }
  auto* ws = static_cast<uint8_t*>(d_workspace);
  auto* scratch = reinterpret_cast<uint16_t*>(ws + w.scratch);
  DeviceGroup g = group;
  g.d_out = scratch;
  DF11_ASSIGN_OR_RETURN(DecodePlan plan, make_decode_plan({&g, 1}, what));
  if (plan.workspace_bytes() > kDecodeRecordBytes) {
    return Status(ErrorCode::kInternal, what + ": a one-group decode needs " +
                                            std::to_string(plan.workspace_bytes()) + " bytes");
  }
  DF11_RETURN_IF_ERROR(init_workspace(plan, ws, kDecodeRecordBytes, stream));
  DF11_RETURN_IF_ERROR(launch_decode(plan, ws, kDecodeRecordBytes, stream));
  DF11_RETURN_IF_ERROR(read_decode_status(plan, ws, stream));
  DF11_ASSIGN_OR_RETURN(const std::vector<ExecSource> sources,
                        member_sources(group.host.n_elements(), members, scratch, what.c_str()));
  return exec_measure(sources, ws + w.transcode, workspace_bytes - w.transcode, stream, out)
      .with_context(group.name);
}

Status launch_exec_pack_group(std::span<const ExecShape> members, std::span<uint8_t* const> d_blobs,
                              void* d_workspace, size_t workspace_bytes, CUstream_st* stream) {
  uint64_t n = 0;
  for (const ExecShape& m : members) n += uint64_t{m.rows} * m.cols;
  DF11_ASSIGN_OR_RETURN(const GroupWorkspace w, group_layout(n, members, "launch_exec_pack_group"));
  if (d_workspace == nullptr || workspace_bytes < w.bytes) {
    return Status(ErrorCode::kInvalidArgument,
                  "launch_exec_pack_group: workspace of " + std::to_string(workspace_bytes) +
                      " bytes, the transcode needs " + std::to_string(w.bytes));
  }
  auto* ws = static_cast<uint8_t*>(d_workspace);
  DF11_ASSIGN_OR_RETURN(const std::vector<ExecSource> sources,
                        member_sources(n, members, reinterpret_cast<uint16_t*>(ws + w.scratch),
                                       "launch_exec_pack_group"));
  return launch_exec_pack(sources, d_blobs, ws + w.transcode, workspace_bytes - w.transcode,
                          stream);
}

}  // namespace df11::cuda
