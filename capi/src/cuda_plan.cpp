// The C API's CUDA plan (df11/df11.h) over df11::cuda's batched decode. Without the CUDA
// decoder (DF11_HAVE_CUDA unset) every entry point reports DF11_ERROR_UNSUPPORTED: the calls
// into df11::cuda sit in generic lambdas that the helpers below then never call, so nothing
// of df11_cuda is linked.
#include <sys/mman.h>

#include <algorithm>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "df11/cuda_decoder.h"  // host-only headers, present in every build
#include "df11/cuda_gemv.h"
#include "df11/df11.h"
#include "gemv_args.h"
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
  std::vector<df11::capi::GemvMember> members;   // the fused GEMV's matrices (created plans)
  std::vector<df11::cuda::GemvMatrix> matrices;  // a call's, reused (one thread at a time)
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

// A fused GEMV entry point: the batch and `matrices` pointer are checked first (so that a
// misuse reads the same whatever the plan's state), then the matrices against the plan's
// members; `body(DecodePlan&, span<const GemvMatrix>)` runs on the converted matrices.
template <typename F>
df11_status on_gemv(df11_cuda_plan* plan, const char* what, const df11_gemv_matrix* matrices,
                    size_t n_matrices, uint32_t batch, F&& body) {
  if (plan == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  return df11::capi::guarded(plan->err, [&]() -> Status {
#if DF11_HAVE_CUDA
    DF11_RETURN_IF_ERROR(df11::capi::check_gemv_batch(batch, what));
    if (n_matrices != 0 && matrices == nullptr) {
      return Status(ErrorCode::kInvalidArgument, std::string(what) + ": matrices is NULL");
    }
    if (!plan->plan) return Status(ErrorCode::kInvalidArgument, "the plan failed to be created");
    DF11_RETURN_IF_ERROR(
        df11::capi::check_gemv_call(plan->members, matrices, n_matrices, batch, what));
    plan->matrices.resize(n_matrices);
    for (size_t i = 0; i < n_matrices; ++i) {
      plan->matrices[i] = df11::cuda::GemvMatrix{matrices[i].rows, matrices[i].cols,
                                                 static_cast<const uint16_t*>(matrices[i].d_x),
                                                 static_cast<uint16_t*>(matrices[i].d_y)};
    }
    return body(*plan->plan, std::span<const df11::cuda::GemvMatrix>(plan->matrices));
#else
    (void)what, (void)matrices, (void)n_matrices, (void)batch, (void)body;
    return Status(ErrorCode::kUnsupported, "this df11 library was built without CUDA");
#endif
  });
}

// A reference GEMV entry point: `body(DecodePlan&, const GemvMatrix&)` after the checks.
template <typename F>
df11_status on_reference(df11_cuda_plan* plan, const char* what, const df11_gemv_matrix* m,
                         uint32_t batch, F&& body) {
  if (plan == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  return df11::capi::guarded(plan->err, [&]() -> Status {
#if DF11_HAVE_CUDA
    DF11_RETURN_IF_ERROR(df11::capi::check_gemv_batch(batch, what));
    if (m == nullptr) return Status(ErrorCode::kInvalidArgument, std::string(what) + ": m is NULL");
    if (!plan->plan) return Status(ErrorCode::kInvalidArgument, "the plan failed to be created");
    const df11::cuda::GemvMatrix gm{m->rows, m->cols, static_cast<const uint16_t*>(m->d_x),
                                    static_cast<uint16_t*>(m->d_y)};
    return body(*plan->plan, gm);
#else
    (void)what, (void)m, (void)batch, (void)body;
    return Status(ErrorCode::kUnsupported, "this df11 library was built without CUDA");
#endif
  });
}

CUstream_st* as_stream(void* stream) { return static_cast<CUstream_st*>(stream); }

// A rows decode entry point: the pointer and width arguments are checked first (the same
// answer with or without CUDA), then `body(DecodePlan&)` runs as on_plan's.
template <typename F>
df11_status on_rows(df11_cuda_plan* plan, const char* what, const int64_t* d_ids, size_t n_ids,
                    size_t row_elements, const void* d_out, F&& body) {
  if (plan == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  const char* bad = n_ids != 0 && d_ids == nullptr   ? "d_ids is NULL"
                    : n_ids != 0 && d_out == nullptr ? "d_out is NULL"
                    : row_elements == 0              ? "row_elements is 0"
                                                     : nullptr;
  if (bad != nullptr) {
    return df11::capi::guarded(plan->err, [&] {
      return Status(ErrorCode::kInvalidArgument, std::string(what) + ": " + bad);
    });
  }
  return on_plan(plan, std::forward<F>(body));
}

// The decoder's view of a group: its host view (validated by the plan) and its device parts.
df11::cuda::DeviceGroup with_device_parts(const df11::GroupView& host, const df11_cuda_group& dev,
                                          std::string name) {
  df11::cuda::DeviceGroup d;
  d.host = host;
  d.d_luts = static_cast<const uint8_t*>(dev.d_luts);
  d.d_encoded_exponent = static_cast<const uint8_t*>(dev.d_encoded_exponent);
  d.d_sign_mantissa = static_cast<const uint8_t*>(dev.d_sign_mantissa);
  d.d_output_positions = static_cast<const uint8_t*>(dev.d_output_positions);
  d.d_gaps = static_cast<const uint8_t*>(dev.d_gaps);
  d.d_out = static_cast<uint16_t*>(dev.d_out);
  d.name = std::move(name);
  return d;
}

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
    out[i] = with_device_parts(f.groups[g].view, dev[i], f.groups[g].tensors.name);
  }
  return Status::ok();
}

// Read-only zero pages standing in for a group's bulk parts when only the device holds them:
// validation reads their sizes, never their bytes, and the mapping reserves address space only.
class SizedOnly {
 public:
  explicit SizedOnly(uint64_t bytes) : bytes_(std::max<uint64_t>(bytes, 1)) {
    void* p = mmap(nullptr, bytes_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    base_ = p == MAP_FAILED ? nullptr : static_cast<const uint8_t*>(p);
  }
  SizedOnly(const SizedOnly&) = delete;
  SizedOnly& operator=(const SizedOnly&) = delete;
  ~SizedOnly() {
    if (base_ != nullptr) munmap(const_cast<uint8_t*>(base_), bytes_);
  }
  bool ok() const { return base_ != nullptr; }
  std::span<const uint8_t> span(uint64_t bytes) const { return {base_, bytes}; }

 private:
  uint64_t bytes_;
  const uint8_t* base_ = nullptr;
};

Status parts_groups(const df11_group_host_parts* host, size_t n_groups, const df11_cuda_group* dev,
                    std::unique_ptr<SizedOnly>& bulk, std::vector<df11::cuda::DeviceGroup>& out) {
  if (n_groups != 0 && (host == nullptr || dev == nullptr)) {
    return Status(ErrorCode::kInvalidArgument, "df11_cuda_plan_create_parts: host or dev is NULL");
  }
  uint64_t largest = 0;
  for (size_t i = 0; i < n_groups; ++i) {
    const df11_group_host_parts& h = host[i];
    if ((h.luts == nullptr && h.luts_bytes != 0) ||
        (h.output_positions == nullptr && h.output_positions_bytes != 0) ||
        (h.split_positions == nullptr && h.split_positions_bytes != 0)) {
      return Status(ErrorCode::kInvalidArgument, "df11_cuda_plan_create_parts: host[" +
                                                     std::to_string(i) +
                                                     "]: a part's pointer is NULL, its size not 0");
    }
    largest = std::max({largest, h.encoded_exponent_bytes, h.sign_mantissa_bytes, h.gaps_bytes});
  }
  bulk = std::make_unique<SizedOnly>(largest);
  if (!bulk->ok()) {
    return Status(ErrorCode::kResourceLimit, "df11_cuda_plan_create_parts: no address space for " +
                                                 std::to_string(largest) + " bytes of part sizes");
  }
  out.resize(n_groups);
  for (size_t i = 0; i < n_groups; ++i) {
    const df11_group_host_parts& h = host[i];
    df11::GroupView view;
    view.luts = {static_cast<const uint8_t*>(h.luts), h.luts_bytes};
    view.output_positions = {static_cast<const uint8_t*>(h.output_positions),
                             h.output_positions_bytes};
    view.split_positions = {static_cast<const uint8_t*>(h.split_positions),
                            h.split_positions_bytes};
    view.encoded_exponent = bulk->span(h.encoded_exponent_bytes);
    view.sign_mantissa = bulk->span(h.sign_mantissa_bytes);
    view.gaps = bulk->span(h.gaps_bytes);
    out[i] = with_device_parts(view, dev[i], h.name != nullptr ? h.name : "");
  }
  return Status::ok();
}

// A plan creation at the C boundary: *out gets a handle in every case but out of memory, and
// `body(plan)` fills it (or reports why not) on a CUDA build.
template <typename F>
df11_status create_plan(df11_cuda_plan** out, F&& body) {
  if (out == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  *out = nullptr;
  df11_cuda_plan* p = new (std::nothrow) df11_cuda_plan();
  if (p == nullptr) return DF11_ERROR_RESOURCE_LIMIT;
  *out = p;
  return df11::capi::guarded(p->err, [&]() -> Status {
    if (!DF11_HAVE_CUDA) {
      return Status(ErrorCode::kUnsupported, "this df11 library was built without CUDA");
    }
    return body(p);
  });
}

}  // namespace

extern "C" {

int df11_has_cuda(void) { return DF11_HAVE_CUDA ? 1 : 0; }

df11_status df11_cuda_plan_create(df11_model* model, const size_t* groups, size_t n_groups,
                                  const df11_cuda_group* dev, df11_cuda_plan** out) {
  return create_plan(out, [&](df11_cuda_plan* p) -> Status {
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
    DF11_RETURN_IF_ERROR(make_plan(*p, device, what));
    p->members = df11::capi::model_members(*model, groups, n_groups);
    return Status::ok();
  });
}

df11_status df11_cuda_plan_create_parts(const df11_group_host_parts* host, size_t n_groups,
                                        const df11_cuda_group* dev, const char* what,
                                        df11_cuda_plan** out) {
  return create_plan(out, [&](df11_cuda_plan* p) -> Status {
    std::unique_ptr<SizedOnly> bulk;
    std::vector<df11::cuda::DeviceGroup> device;
    DF11_RETURN_IF_ERROR(parts_groups(host, n_groups, dev, bulk, device));
    return make_plan(*p, device, what != nullptr ? what : "coded groups");
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

df11_status df11_cuda_status_copy_many(df11_cuda_plan* const* plans,
                                       const void* const* d_workspaces, size_t n, void* h_status,
                                       size_t slot_bytes, void* stream) {
  if (n == 0) return DF11_OK;
  if (plans == nullptr || d_workspaces == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  for (size_t k = 0; k < n; ++k) {
    if (plans[k] == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  }
  return on_plan(plans[0], [&](auto&) -> Status {
#if DF11_HAVE_CUDA
    std::vector<df11::cuda::DecodePlan*> decode_plans(n);
    for (size_t k = 0; k < n; ++k) {
      if (!plans[k]->plan) {
        return Status(ErrorCode::kInvalidArgument, "df11_cuda_status_copy_many: plan " +
                                                       std::to_string(k) + " failed to be created");
      }
      decode_plans[k] = &*plans[k]->plan;
    }
    return df11::cuda::copy_decode_status_many(decode_plans, {d_workspaces, n}, h_status,
                                               slot_bytes, as_stream(stream));
#else
    (void)d_workspaces, (void)h_status, (void)slot_bytes, (void)stream;
    return Status::ok();
#endif
  });
}

df11_status df11_cuda_group_status_many(df11_cuda_plan* const* plans, size_t n,
                                        const void* h_status, size_t slot_bytes, size_t* failed) {
  if (n != 0 && (plans == nullptr || h_status == nullptr)) return DF11_ERROR_INVALID_ARGUMENT;
  const auto* const h = static_cast<const uint8_t*>(h_status);
  for (size_t k = 0; k < n; ++k) {
    if (plans[k] == nullptr) {
      if (failed != nullptr) *failed = k;
      return DF11_ERROR_INVALID_ARGUMENT;
    }
    const size_t groups = plan_size(plans[k], [](const auto& p) { return p.n_groups(); });
    if (plan_size(plans[k], [](const auto&) { return size_t{1}; }) == 0) {
      // No plan (its creation failed, or no CUDA): the single read's error and message.
      if (failed != nullptr) *failed = k;
      return df11_cuda_group_status(plans[k], h + k * slot_bytes, slot_bytes, 0);
    }
    for (size_t g = 0; g < groups; ++g) {
      const df11_status s = df11_cuda_group_status(plans[k], h + k * slot_bytes, slot_bytes, g);
      if (s != DF11_OK) {
        if (failed != nullptr) *failed = k;
        return s;
      }
    }
  }
  return DF11_OK;
}

df11_status df11_cuda_decode_and_copy_status(df11_cuda_plan* plan, void* d_workspace,
                                             size_t workspace_bytes, void* h_status,
                                             size_t status_bytes, void* stream) {
  return on_plan(plan, [&](auto& p) {
    DF11_RETURN_IF_ERROR(
        df11::cuda::launch_decode(p, d_workspace, workspace_bytes, as_stream(stream)));
    return df11::cuda::copy_decode_status(p, d_workspace, h_status, status_bytes,
                                          as_stream(stream));
  });
}

df11_status df11_cuda_decode_rows(df11_cuda_plan* plan, size_t i, const int64_t* d_ids,
                                  size_t n_ids, size_t row_elements, void* d_out, void* d_workspace,
                                  size_t workspace_bytes, void* stream) {
  return on_rows(plan, "df11_cuda_decode_rows", d_ids, n_ids, row_elements, d_out, [&](auto& p) {
    return df11::cuda::launch_decode_rows(p, i, d_ids, n_ids, row_elements,
                                          static_cast<uint16_t*>(d_out), d_workspace,
                                          workspace_bytes, as_stream(stream));
  });
}

static_assert(DF11_CUDA_MAX_SELECTED_ROWS == df11::cuda::kMaxSelectedRows);

df11_status df11_cuda_decode_selected_rows(df11_cuda_plan* plan, size_t i, const int32_t* d_mask,
                                           size_t row_elements, size_t expected_rows, void* d_out,
                                           void* d_workspace, size_t workspace_bytes,
                                           void* stream) {
  if (plan == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  const char* bad = d_mask == nullptr   ? "d_mask is NULL"
                    : d_out == nullptr  ? "d_out is NULL"
                    : row_elements == 0 ? "row_elements is 0"
                                        : nullptr;
  if (bad != nullptr) {
    return df11::capi::guarded(plan->err, [&] {
      return Status(ErrorCode::kInvalidArgument,
                    std::string("df11_cuda_decode_selected_rows: ") + bad);
    });
  }
  return on_plan(plan, [&](auto& p) {
    return df11::cuda::launch_decode_selected_rows(p, i, d_mask, row_elements, expected_rows,
                                                   static_cast<uint16_t*>(d_out), d_workspace,
                                                   workspace_bytes, as_stream(stream));
  });
}

static_assert(DF11_CUDA_MAX_DECODE_SPANS == df11::cuda::kMaxDecodeSpans);

df11_status df11_cuda_decode_spans(df11_cuda_plan* plan, size_t i, const uint64_t* offsets,
                                   const uint64_t* counts, size_t n_spans, void* d_out,
                                   void* d_workspace, size_t workspace_bytes, void* stream) {
  if (plan == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  const char* bad =
      n_spans != 0 && (offsets == nullptr || counts == nullptr) ? "offsets or counts is NULL"
      : n_spans > df11::cuda::kMaxDecodeSpans ? "more than DF11_CUDA_MAX_DECODE_SPANS spans"
                                              : nullptr;
  uint64_t total = 0;
  for (size_t s = 0; bad == nullptr && s < n_spans; ++s) total += counts[s];
  if (bad == nullptr && total != 0 && d_out == nullptr) bad = "d_out is NULL";
  if (bad != nullptr) {
    return df11::capi::guarded(plan->err, [&] {
      return Status(ErrorCode::kInvalidArgument, std::string("df11_cuda_decode_spans: ") + bad);
    });
  }
  return on_plan(plan, [&](auto& p) {
    df11::cuda::DecodeSpan spans[df11::cuda::kMaxDecodeSpans];
    for (size_t s = 0; s < n_spans; ++s) spans[s] = {offsets[s], counts[s]};
    return df11::cuda::launch_decode_spans(
        p, i, std::span<const df11::cuda::DecodeSpan>(spans, n_spans),
        static_cast<uint16_t*>(d_out), d_workspace, workspace_bytes, as_stream(stream));
  });
}

df11_status df11_cuda_decode_rows_and_copy_status(df11_cuda_plan* plan, size_t i,
                                                  const int64_t* d_ids, size_t n_ids,
                                                  size_t row_elements, void* d_out,
                                                  void* d_workspace, size_t workspace_bytes,
                                                  void* h_status, size_t status_bytes,
                                                  void* stream) {
  const char* what = "df11_cuda_decode_rows_and_copy_status";
  return on_rows(plan, what, d_ids, n_ids, row_elements, d_out, [&](auto& p) {
    DF11_RETURN_IF_ERROR(df11::cuda::launch_decode_rows(p, i, d_ids, n_ids, row_elements,
                                                        static_cast<uint16_t*>(d_out), d_workspace,
                                                        workspace_bytes, as_stream(stream)));
    return df11::cuda::copy_decode_status(p, d_workspace, h_status, status_bytes,
                                          as_stream(stream));
  });
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

size_t df11_cuda_gemv_matrix_count(const df11_cuda_plan* plan) {
  return plan_size(plan, [&](const auto&) { return plan->members.size(); });
}

df11_status df11_cuda_gemv_matrix_info(df11_cuda_plan* plan, size_t i, df11_gemv_matrix* out,
                                       const char** name) {
  return on_plan(plan, [&](auto&) -> Status {
    if (out == nullptr) {
      return Status(ErrorCode::kInvalidArgument, "df11_cuda_gemv_matrix_info: out is NULL");
    }
    if (i >= plan->members.size()) {
      return Status(ErrorCode::kInvalidArgument, "df11_cuda_gemv_matrix_info: matrix " +
                                                     std::to_string(i) +
                                                     " out of range (the plan has " +
                                                     std::to_string(plan->members.size()) + ")");
    }
    const df11::capi::GemvMember& m = plan->members[i];
    if (m.rows > UINT32_MAX || m.cols > UINT32_MAX) {
      return Status(ErrorCode::kResourceLimit,
                    "df11_cuda_gemv_matrix_info: '" + m.name + "' is " + std::to_string(m.rows) +
                        " x " + std::to_string(m.cols) + ", beyond the fused kernel's 2^32 - 1");
    }
    *out = df11_gemv_matrix{static_cast<uint32_t>(m.rows), static_cast<uint32_t>(m.cols), nullptr,
                            nullptr};
    if (name != nullptr) *name = m.name.c_str();
    return Status::ok();
  });
}

df11_status df11_cuda_gemv_workspace_bytes(df11_cuda_plan* plan, const df11_gemv_matrix* matrices,
                                           size_t n_matrices, uint32_t batch, size_t* out) {
  const char* what = "df11_cuda_gemv_workspace_bytes";
  return on_gemv(plan, what, matrices, n_matrices, batch, [&](auto& p, auto gm) -> Status {
    if (out == nullptr)
      return Status(ErrorCode::kInvalidArgument, std::string(what) + ": out is NULL");
    DF11_ASSIGN_OR_RETURN(const size_t bytes, df11::cuda::gemv_workspace_bytes(p, gm, batch));
    *out = bytes;
    return Status::ok();
  });
}

df11_status df11_cuda_decode_gemv(df11_cuda_plan* plan, const df11_gemv_matrix* matrices,
                                  size_t n_matrices, uint32_t batch, void* d_workspace,
                                  size_t workspace_bytes, void* stream) {
  return on_gemv(plan, "df11_cuda_decode_gemv", matrices, n_matrices, batch, [&](auto& p, auto gm) {
    return df11::cuda::launch_decode_gemv(p, gm, batch, d_workspace, workspace_bytes,
                                          as_stream(stream));
  });
}

df11_status df11_cuda_reference_gemv_workspace_bytes(df11_cuda_plan* plan,
                                                     const df11_gemv_matrix* m, uint32_t batch,
                                                     size_t* out) {
  const char* what = "df11_cuda_reference_gemv_workspace_bytes";
  return on_reference(plan, what, m, batch, [&](auto&, const auto& gm) -> Status {
    if (out == nullptr)
      return Status(ErrorCode::kInvalidArgument, std::string(what) + ": out is NULL");
    *out = df11::cuda::reference_gemv_workspace_bytes(gm.rows, gm.cols, batch);
    return Status::ok();
  });
}

df11_status df11_cuda_reference_gemv(df11_cuda_plan* plan, const void* d_w,
                                     const df11_gemv_matrix* m, uint32_t batch, void* d_workspace,
                                     size_t workspace_bytes, void* stream) {
  return on_reference(plan, "df11_cuda_reference_gemv", m, batch, [&](auto&, const auto& gm) {
    return df11::cuda::launch_reference_gemv(static_cast<const uint16_t*>(d_w), gm, batch,
                                             d_workspace, workspace_bytes, as_stream(stream));
  });
}

}  // extern "C"
