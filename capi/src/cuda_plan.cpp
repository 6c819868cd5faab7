// The C API's CUDA plan (df11/df11.h) over df11::cuda's batched decode. Without the CUDA
// decoder (DF11_HAVE_CUDA unset) every entry point reports DF11_ERROR_UNSUPPORTED: the calls
// into df11::cuda sit in generic lambdas that the helpers below then never call, so nothing
// of df11_cuda is linked.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "df11/cuda_decoder.h"  // host-only header, present in every build
#include "df11/df11.h"
#include "model_handle.h"

#ifndef DF11_HAVE_CUDA  // set by df11_cuda's target when the C API links it
#define DF11_HAVE_CUDA 0
#endif

using df11::ErrorCode;
using df11::Status;

struct df11_cuda_plan {
  df11::capi::ErrorState err;
#if DF11_HAVE_CUDA
  std::optional<df11::cuda::DecodePlan> plan;  // empty if creation failed
#endif
};

namespace {

// An entry point on a created plan: `body(DecodePlan&)` runs at the C boundary (guarded).
template <typename F>
df11_status on_plan(df11_cuda_plan* plan, F&& body) {
  if (plan == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  return df11::capi::guarded(plan->err, [&]() -> Status {
#if DF11_HAVE_CUDA
    if (!plan->plan) return Status(ErrorCode::kInvalidArgument, "the plan failed to be created");
    return body(*plan->plan);
#else
    (void)body;
    return Status(ErrorCode::kUnsupported, "this df11 library was built without CUDA");
#endif
  });
}

// A plan property, 0 without a plan.
template <typename F>
size_t plan_size(const df11_cuda_plan* plan, F&& get) {
#if DF11_HAVE_CUDA
  if (plan != nullptr && plan->plan) return get(*plan->plan);
#else
  (void)plan, (void)get;
#endif
  return 0;
}

// Makes the plan into `out`'s slot.
Status make_plan(df11_cuda_plan& out, const std::vector<df11::cuda::DeviceGroup>& device,
                 const std::string& what) {
#if DF11_HAVE_CUDA
  auto plan = df11::cuda::make_decode_plan(device, what);
  if (!plan) return plan.status();
  out.plan.emplace(std::move(*plan));
  return Status::ok();
#else
  (void)out, (void)device, (void)what;
  return Status(ErrorCode::kUnsupported, "this df11 library was built without CUDA");
#endif
}

CUstream_st* as_stream(void* stream) { return static_cast<CUstream_st*>(stream); }

// The df11::cuda description of groups[i] of the model with the caller's device pointers.
Status device_groups(const df11::app::Df11Folder& f, const size_t* groups, size_t n_groups,
                     const df11_cuda_group* dev, std::vector<df11::cuda::DeviceGroup>& out) {
  if (n_groups != 0 && (groups == nullptr || dev == nullptr)) {
    return Status(ErrorCode::kInvalidArgument, "df11_cuda_plan_create: groups or dev is NULL");
  }
  std::vector<bool> seen(f.groups.size());
  out.resize(n_groups);
  for (size_t i = 0; i < n_groups; ++i) {
    const size_t g = groups[i];
    if (g >= f.groups.size()) {
      return Status(ErrorCode::kInvalidArgument,
                    "df11_cuda_plan_create: groups[" + std::to_string(i) + "] = " +
                        std::to_string(g) + ", the model has " + std::to_string(f.groups.size()));
    }
    if (seen[g]) return Status(ErrorCode::kInvalidArgument, f.groups[g].what + ": planned twice");
    seen[g] = true;
    df11::cuda::DeviceGroup& d = out[i];
    d.host = f.groups[g].view;
    d.d_luts = static_cast<const uint8_t*>(dev[i].d_luts);
    d.d_encoded_exponent = static_cast<const uint8_t*>(dev[i].d_encoded_exponent);
    d.d_sign_mantissa = static_cast<const uint8_t*>(dev[i].d_sign_mantissa);
    d.d_output_positions = static_cast<const uint8_t*>(dev[i].d_output_positions);
    d.d_gaps = static_cast<const uint8_t*>(dev[i].d_gaps);
    d.d_out = static_cast<uint16_t*>(dev[i].d_out);
    d.name = f.groups[g].tensors.name;
  }
  return Status::ok();
}

}  // namespace

extern "C" {

int df11_has_cuda(void) { return DF11_HAVE_CUDA ? 1 : 0; }

df11_status df11_cuda_plan_create(df11_model* model, const size_t* groups, size_t n_groups,
                                  const df11_cuda_group* dev, df11_cuda_plan** out) {
  if (out == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  *out = nullptr;
  df11_cuda_plan* p = new (std::nothrow) df11_cuda_plan();
  if (p == nullptr) return DF11_ERROR_RESOURCE_LIMIT;
  *out = p;
  return df11::capi::guarded(p->err, [&]() -> Status {
    if (!DF11_HAVE_CUDA) {
      return Status(ErrorCode::kUnsupported, "this df11 library was built without CUDA");
    }
    if (model == nullptr || !model->folder) {
      return Status(ErrorCode::kInvalidArgument, "df11_cuda_plan_create: no open model");
    }
    const df11::app::Df11Folder& f = *model->folder;
    std::vector<df11::cuda::DeviceGroup> device;
    DF11_RETURN_IF_ERROR(device_groups(f, groups, n_groups, dev, device));
    // Messages read "model-00001.safetensors: group 'model.layers.3': ...": the groups of a
    // plan usually come from one shard, and the group names the rest.
    const std::string what =
        n_groups != 0 ? f.folder.shard_names[f.groups[groups[0]].shard] : f.folder.dir.string();
    return make_plan(*p, device, what);
  });
}

void df11_cuda_plan_destroy(df11_cuda_plan* plan) { delete plan; }

const char* df11_cuda_plan_errmsg(const df11_cuda_plan* plan) {
  return plan == nullptr ? "plan handle is NULL" : plan->err.last_message();
}

df11_status df11_cuda_plan_errcode(const df11_cuda_plan* plan) {
  return plan == nullptr ? DF11_ERROR_INVALID_ARGUMENT : plan->err.last_code();
}

size_t df11_cuda_plan_workspace_bytes(const df11_cuda_plan* plan) {
  return plan_size(plan, [](const auto& p) { return p.workspace_bytes(); });
}

size_t df11_cuda_plan_status_bytes(const df11_cuda_plan* plan) {
  return plan_size(plan, [](const auto& p) { return p.status_copy_bytes(); });
}

df11_status df11_cuda_workspace_init(df11_cuda_plan* plan, void* d_workspace,
                                     size_t workspace_bytes, void* stream) {
  return on_plan(plan, [&](auto& p) {
    return df11::cuda::init_workspace(p, d_workspace, workspace_bytes, as_stream(stream));
  });
}

df11_status df11_cuda_decode(df11_cuda_plan* plan, void* d_workspace, size_t workspace_bytes,
                             void* stream) {
  return on_plan(plan, [&](auto& p) {
    return df11::cuda::launch_decode(p, d_workspace, workspace_bytes, as_stream(stream));
  });
}

df11_status df11_cuda_status_sync(df11_cuda_plan* plan, const void* d_workspace, void* stream) {
  return on_plan(plan, [&](auto& p) {
    return df11::cuda::read_decode_status(p, d_workspace, as_stream(stream));
  });
}

df11_status df11_cuda_status_copy(df11_cuda_plan* plan, const void* d_workspace, void* h_status,
                                  size_t status_bytes, void* stream) {
  return on_plan(plan, [&](auto& p) {
    return df11::cuda::copy_decode_status(p, d_workspace, h_status, status_bytes,
                                          as_stream(stream));
  });
}

df11_status df11_cuda_group_status(df11_cuda_plan* plan, const void* h_status, size_t status_bytes,
                                   size_t i) {
  return on_plan(
      plan, [&](auto& p) { return df11::cuda::copied_group_status(p, h_status, status_bytes, i); });
}

df11_status df11_cuda_plan_launch_info(const df11_cuda_plan* plan, uint32_t* grid,
                                       uint32_t* shared_bytes, int* compact) {
  if (!DF11_HAVE_CUDA) return DF11_ERROR_UNSUPPORTED;
  if (plan_size(plan, [](const auto&) { return 1; }) == 0) return DF11_ERROR_INVALID_ARGUMENT;
  if (grid != nullptr)
    *grid = static_cast<uint32_t>(plan_size(plan, [](const auto& p) { return p.grid_size(); }));
  if (shared_bytes != nullptr) {
    *shared_bytes =
        static_cast<uint32_t>(plan_size(plan, [](const auto& p) { return p.shared_bytes(); }));
  }
  if (compact != nullptr) {
    *compact = static_cast<int>(plan_size(plan, [](const auto& p) { return p.compact(); }));
  }
  return DF11_OK;
}

}  // extern "C"
