// What the C API's CUDA execution-layout sources share (cuda_exec_api.cpp,
// cuda_compact_api.cpp): the C boundary with the model's error state, and argument checks.
#pragma once

#include <string>
#include <vector>

#include "df11/cuda_exec.h"  // host-only header, present in every build
#include "df11/df11.h"
#include "gemv_args.h"  // model_members: the coded members of a group
#include "model_handle.h"

#ifndef DF11_HAVE_CUDA
#define DF11_HAVE_CUDA 0
#endif

namespace df11::capi::cuda_api {

// Runs `body` at the C boundary with the model's error state (a discarded one for NULL, where
// the function allows it). `body` is a generic lambda: without CUDA it is never instantiated,
// so nothing of df11_cuda is referenced.
template <typename F>
df11_status on_exec(df11_model* model, bool model_required, F&& body) {
  df11::capi::ErrorState scratch;
  df11::capi::ErrorState& err = model != nullptr ? model->err : scratch;
  if (model == nullptr && model_required) return DF11_ERROR_INVALID_ARGUMENT;
  return df11::capi::guarded(err, [&]() -> Status {
    if (model != nullptr && !model->folder) {
      return Status(ErrorCode::kInvalidArgument, "the model failed to open");
    }
#if DF11_HAVE_CUDA
    return body(0);
#else
    (void)body;
    return Status(ErrorCode::kUnsupported, "this df11 library was built without CUDA");
#endif
  });
}

inline CUstream_st* as_stream(void* stream) { return static_cast<CUstream_st*>(stream); }

inline df11::cuda::ExecStatusUse status_use(uint32_t flags) {
  return (flags & DF11_EXEC_KEEP_STATUS) != 0 ? df11::cuda::ExecStatusUse::kKeep
                                              : df11::cuda::ExecStatusUse::kReset;
}

// The coded members of `group` as shapes (kInvalidArgument out of range or beyond 2^32 - 1).
inline Status group_shapes(const df11_model& model, size_t group, const char* what,
                           std::vector<df11::capi::GemvMember>& members,
                           std::vector<df11::cuda::ExecShape>& shapes) {
  if (group >= model.groups.size()) {
    return Status(ErrorCode::kInvalidArgument,
                  std::string(what) + ": group " + std::to_string(group) + " out of range (" +
                      std::to_string(model.groups.size()) + " groups)");
  }
  members = df11::capi::model_members(model, &group, 1);
  shapes.clear();
  for (const auto& m : members) {
    if (m.rows > UINT32_MAX || m.cols > UINT32_MAX) {
      return Status(ErrorCode::kResourceLimit, std::string(what) + ": '" + m.name + "' is " +
                                                   std::to_string(m.rows) + " x " +
                                                   std::to_string(m.cols) + ", beyond 2^32 - 1");
    }
    shapes.push_back({static_cast<uint32_t>(m.rows), static_cast<uint32_t>(m.cols)});
  }
  return Status::ok();
}

inline Status null_arg(const char* what, const char* arg) {
  return Status(ErrorCode::kInvalidArgument, std::string(what) + ": " + arg + " is NULL");
}

inline Status check_count(const char* what, size_t n, size_t want) {
  if (n != want) {
    return Status(ErrorCode::kInvalidArgument, std::string(what) + ": " + std::to_string(n) +
                                                   " matrices, the group has " +
                                                   std::to_string(want) + " coded members");
  }
  return Status::ok();
}

// The decoder's view of group `group` of `model` (checked by the caller) from its device copy.
inline df11::cuda::DeviceGroup device_group(const df11_model& model, size_t group,
                                            const df11_cuda_group& dev) {
  const df11::app::CodedGroup& cg = model.folder->groups[group];
  df11::cuda::DeviceGroup d;
  d.host = cg.view;
  d.d_luts = static_cast<const uint8_t*>(dev.d_luts);
  d.d_encoded_exponent = static_cast<const uint8_t*>(dev.d_encoded_exponent);
  d.d_sign_mantissa = static_cast<const uint8_t*>(dev.d_sign_mantissa);
  d.d_output_positions = static_cast<const uint8_t*>(dev.d_output_positions);
  d.d_gaps = static_cast<const uint8_t*>(dev.d_gaps);
  d.name = cg.what;
  return d;
}

// The name of member k of group `group`, owned by the model handle (as model_members reads it).
inline const char* member_name(const df11_model& model, size_t group, size_t k) {
  const df11::app::CodedGroup& cg = model.folder->groups[group];
  return model.folder->metadata.empty()
             ? model.tensors[model.groups[group].members[k]].name.c_str()
             : model.folder->metadata[cg.shard].groups[cg.meta_index].members[k].name.c_str();
}

}  // namespace df11::capi::cuda_api
