// What the group transcodes share (exec_group.cpp, compact_group.cpp): a DF11 group decoded
// once into a workspace, its members' BF16 weights read from there. Nothing but the workspace
// ever holds the group's BF16 weights.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "df11/cuda_decoder.h"
#include "df11/cuda_exec.h"  // ExecShape

namespace df11::cuda::detail {

// Workspace layout: the decode's records, then the group's BF16 weights (256-aligned), then
// `transcode` bytes for the layout's own kernels.
struct GroupScratch {
  static constexpr uint64_t kRecordBytes = 256;  // a one-group decode's records (24 bytes today)
  uint64_t weights = kRecordBytes, transcode = 0, bytes = 0;
};

// The layout for a group of `n_elements` whose members (tiling it, in order) are `members`,
// with `transcode` bytes after its weights. kInvalidArgument where the members do not tile it.
Result<GroupScratch> group_scratch(uint64_t n_elements, std::span<const ExecShape> members,
                                   uint64_t transcode, const std::string& what);

// Decodes `group` (group.d_out ignored) into the workspace's weights and checks the decode's
// status: synchronises `stream`. kInvalidArgument for a workspace smaller than s.bytes or not
// 256-byte aligned; the decode's data errors name the group.
Status decode_group_to_scratch(const DeviceGroup& group, const GroupScratch& s, void* d_workspace,
                               size_t workspace_bytes, CUstream_st* stream,
                               const std::string& what);

}  // namespace df11::cuda::detail
