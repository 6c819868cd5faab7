// The C API's compact execution layout (df11/df11.h, experimental section) over df11::cuda's
// cuda_compact.h. Without the CUDA decoder every entry point reports DF11_ERROR_UNSUPPORTED and
// nothing of df11_cuda is referenced.
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cuda_api_common.h"
#include "df11/cuda_compact.h"
#include "df11/exec_compact.h"  // compact_geometry

using df11::ErrorCode;
using df11::Status;
using namespace df11::capi::cuda_api;

static_assert(DF11_COMPACT_SYMBOLS == df11::kCompactSymbols);
static_assert(DF11_COMPACT_TABLE_BYTES == df11::cuda::kCompactDecodeTableEntries * 4);
static_assert(DF11_COMPACT_MAX_BATCH == df11::cuda::kCompactMaxBatch);

namespace df11::capi {

// df11_cuda_compact_measure's plans by group (df11_model::compact_plans).
struct CompactPlans {
  std::map<size_t, std::vector<df11::cuda::CompactPlan>> by_group;
};

}  // namespace df11::capi

namespace {

// The problem bits a compact launch sets: the u32 at bytes 8..11 of the execution layout's
// status record (where its problem kinds lie, so that one check serves both layouts).
constexpr size_t kCompactStatusOffset = 8;

// What a measure gives the caller for a plan's header (d_blob and d_table NULL).
df11_compact_matrix measured_matrix(const df11::CompactHeader& h) {
  return df11_compact_matrix{nullptr,       nullptr, static_cast<size_t>(h.total_bytes),
                             h.stream_bits, h.rows,  h.cols};
}

// kInvalidArgument, naming `what`, unless `m` is what the measure of `h` gave with its blob and
// table in place (16-byte aligned).
Status check_measured(const df11_compact_matrix& m, const df11::CompactHeader& h,
                      const std::string& what) {
  if (m.rows != h.rows || m.cols != h.cols || m.bytes < h.total_bytes ||
      m.stream_bits != h.stream_bits) {
    return Status(ErrorCode::kInvalidArgument, what + " is not what the measure gave");
  }
  if (m.d_table == nullptr || reinterpret_cast<uintptr_t>(m.d_table) % 16 != 0 ||
      m.d_blob == nullptr || reinterpret_cast<uintptr_t>(m.d_blob) % 16 != 0) {
    return Status(ErrorCode::kInvalidArgument,
                  what + ": d_blob or d_table null or not 16-byte aligned");
  }
  return Status::ok();
}

// A single source of the compact BF16 calls (kInvalidArgument for a null one).
Status check_source(const df11_exec_source* src, const char* what) {
  if (src == nullptr) return null_arg(what, "src");
  if (src->d_w == nullptr) return null_arg(what, "src->d_w");
  return Status::ok();
}

// The plan of `src` with code `lengths` (synchronises `stream`). A template on the C
// boundary's tag (on_exec's body argument), so that a build without CUDA references nothing
// of df11_cuda.
template <typename Tag>
df11::Result<df11::cuda::CompactPlan> source_plan(Tag, const df11_exec_source* src,
                                                  const uint8_t* lengths, void* d_workspace,
                                                  size_t workspace_bytes, void* stream,
                                                  const char* what) {
  if (lengths == nullptr) return null_arg(what, "lengths");
  DF11_RETURN_IF_ERROR(check_source(src, what));
  std::array<uint8_t, df11::kCompactSymbols> l{};
  std::memcpy(l.data(), lengths, l.size());
  return df11::cuda::compact_measure(static_cast<const uint16_t*>(src->d_w), src->rows, src->cols,
                                     l, d_workspace, workspace_bytes, as_stream(stream));
}

// The handle's plans (under its compact_mutex).
std::map<size_t, std::vector<df11::cuda::CompactPlan>>& plans_of(df11_model& model) {
  if (!model.compact_plans) model.compact_plans = std::make_shared<df11::capi::CompactPlans>();
  return model.compact_plans->by_group;
}

void drop_plans(df11_model& model, size_t group) {
  const std::lock_guard<std::mutex> lock(model.compact_mutex);
  plans_of(model).erase(group);
}

Status invalid(const std::string& what) { return Status(ErrorCode::kInvalidArgument, what); }

// What a launch checks of a matrix, checked before the status record is touched, so that a
// refused call leaves the record (and the earlier calls' reports in it) as it was.
Status check_matrix(const df11_compact_matrix& m, const std::string& what) {
  if (m.d_blob == nullptr || m.d_table == nullptr) {
    return invalid(what + ": d_blob or d_table is null");
  }
  if (reinterpret_cast<uintptr_t>(m.d_blob) % 16 != 0) {
    return invalid(what + ": d_blob is not 16-byte aligned");
  }
  return df11::compact_geometry(m.rows, m.cols, what).status();
}

df11::cuda::CompactMatrix compact_matrix(const df11_compact_matrix& m) {
  return {static_cast<const uint8_t*>(m.d_blob), static_cast<const uint32_t*>(m.d_table), m.rows,
          m.cols, m.stream_bits};
}

// The status record's problem word, after a reset unless `flags` keeps it.
template <typename Any>
df11::Result<uint32_t*> status_word(void* d_status, size_t status_bytes, uint32_t flags,
                                    void* stream, const char* what, Any) {
  if (d_status == nullptr || status_bytes < df11::cuda::kExecStatusBytes ||
      reinterpret_cast<uintptr_t>(d_status) % 16 != 0) {
    return Status(ErrorCode::kInvalidArgument, std::string(what) + ": the status record must be " +
                                                   std::to_string(df11::cuda::kExecStatusBytes) +
                                                   " bytes of 16-byte aligned device memory");
  }
  if (status_use(flags) == df11::cuda::ExecStatusUse::kReset) {
    DF11_RETURN_IF_ERROR(df11::cuda::reset_exec_status(d_status, status_bytes, as_stream(stream)));
  }
  return reinterpret_cast<uint32_t*>(static_cast<uint8_t*>(d_status) + kCompactStatusOffset);
}

}  // namespace

extern "C" {

df11_status df11_cuda_compact_workspace_bytes(df11_model* model, size_t group, size_t* n_matrices,
                                              size_t* workspace_bytes) {
  const char* what = "df11_cuda_compact_workspace_bytes";
  return on_exec(model, true, [&](auto) -> Status {
    if (n_matrices == nullptr || workspace_bytes == nullptr) return null_arg(what, "an output");
    std::vector<df11::capi::GemvMember> members;
    std::vector<df11::cuda::ExecShape> shapes;
    DF11_RETURN_IF_ERROR(group_shapes(*model, group, what, members, shapes));
    DF11_ASSIGN_OR_RETURN(const size_t bytes, df11::cuda::compact_group_workspace_bytes(
                                                  model->folder->groups[group].view, shapes));
    *n_matrices = shapes.size();
    *workspace_bytes = bytes;
    return Status::ok();
  });
}

df11_status df11_cuda_compact_count(df11_model* model, size_t group, const df11_cuda_group* dev,
                                    void* d_workspace, size_t workspace_bytes, void* stream,
                                    uint64_t* counts, size_t n) {
  const char* what = "df11_cuda_compact_count";
  return on_exec(model, true, [&](auto) -> Status {
    if (dev == nullptr) return null_arg(what, "dev");
    if (counts == nullptr) return null_arg(what, "counts");
    std::vector<df11::capi::GemvMember> members;
    std::vector<df11::cuda::ExecShape> shapes;
    DF11_RETURN_IF_ERROR(group_shapes(*model, group, what, members, shapes));
    DF11_RETURN_IF_ERROR(check_count(what, n, shapes.size()));
    drop_plans(*model, group);  // a new count of the group: an earlier measure is stale
    DF11_ASSIGN_OR_RETURN(const auto c, df11::cuda::compact_count_group(
                                            device_group(*model, group, *dev), shapes, d_workspace,
                                            workspace_bytes, as_stream(stream)));
    for (size_t k = 0; k < n; ++k) {
      std::memcpy(counts + k * DF11_COMPACT_SYMBOLS, c[k].data(), sizeof c[k]);
    }
    return Status::ok();
  });
}

df11_status df11_cuda_compact_measure(df11_model* model, size_t group, void* d_workspace,
                                      size_t workspace_bytes, const uint8_t* lengths, void* stream,
                                      df11_compact_matrix* out, const char** names, size_t n) {
  const char* what = "df11_cuda_compact_measure";
  return on_exec(model, true, [&](auto) -> Status {
    if (lengths == nullptr) return null_arg(what, "lengths");
    if (out == nullptr) return null_arg(what, "out");
    std::vector<df11::capi::GemvMember> members;
    std::vector<df11::cuda::ExecShape> shapes;
    DF11_RETURN_IF_ERROR(group_shapes(*model, group, what, members, shapes));
    DF11_RETURN_IF_ERROR(check_count(what, n, shapes.size()));
    drop_plans(*model, group);
    std::vector<std::array<uint8_t, df11::kCompactSymbols>> l(n);
    for (size_t k = 0; k < n; ++k) {
      std::memcpy(l[k].data(), lengths + k * DF11_COMPACT_SYMBOLS, DF11_COMPACT_SYMBOLS);
    }
    DF11_ASSIGN_OR_RETURN(std::vector<df11::cuda::CompactPlan> plans,
                          df11::cuda::compact_plan_group(
                              shapes, l, d_workspace, workspace_bytes, as_stream(stream),
                              std::string(what) + ": " + model->folder->groups[group].what));
    for (size_t k = 0; k < n; ++k) {
      out[k] = measured_matrix(plans[k].header);
      if (names != nullptr) names[k] = member_name(*model, group, k);
    }
    const std::lock_guard<std::mutex> lock(model->compact_mutex);
    plans_of(*model)[group] = std::move(plans);
    return Status::ok();
  });
}

df11_status df11_cuda_compact_pack(df11_model* model, size_t group, void* d_workspace,
                                   size_t workspace_bytes, const df11_compact_matrix* m, size_t n,
                                   void* stream) {
  const char* what = "df11_cuda_compact_pack";
  return on_exec(model, true, [&](auto) -> Status {
    if (m == nullptr) return null_arg(what, "m");
    std::vector<df11::cuda::CompactPlan> plans;
    {  // The group's plans leave the handle once the matrices match them.
      const std::lock_guard<std::mutex> lock(model->compact_mutex);
      auto& all = plans_of(*model);
      auto it = all.find(group);
      if (it == all.end()) {
        return Status(
            ErrorCode::kInvalidArgument,
            std::string(what) + ": group " + std::to_string(group) + " has not been measured");
      }
      DF11_RETURN_IF_ERROR(check_count(what, n, it->second.size()));
      for (size_t k = 0; k < n; ++k) {
        DF11_RETURN_IF_ERROR(check_measured(m[k], it->second[k].header,
                                            std::string(what) + ": matrix " + std::to_string(k)));
      }
      plans = std::move(it->second);
      all.erase(it);
    }
    std::vector<uint8_t*> blobs(n);
    for (size_t k = 0; k < n; ++k) blobs[k] = static_cast<uint8_t*>(const_cast<void*>(m[k].d_blob));
    DF11_RETURN_IF_ERROR(df11::cuda::launch_compact_pack_group(plans, blobs, d_workspace,
                                                               workspace_bytes, as_stream(stream)));
    for (size_t k = 0; k < n; ++k) {
      DF11_RETURN_IF_ERROR(df11::cuda::upload_compact_decode_table(
          plans[k].code, static_cast<uint32_t*>(const_cast<void*>(m[k].d_table)),
          as_stream(stream)));
    }
    return Status::ok();
  });
}

df11_status df11_cuda_compact_bf16_workspace_bytes(df11_model* model, uint32_t rows, uint32_t cols,
                                                   size_t* workspace_bytes) {
  return on_exec(model, false, [&](auto) -> Status {
    if (workspace_bytes == nullptr) {
      return null_arg("df11_cuda_compact_bf16_workspace_bytes", "workspace_bytes");
    }
    DF11_ASSIGN_OR_RETURN(const uint64_t bytes, df11::cuda::compact_workspace_bytes(rows, cols));
    *workspace_bytes = static_cast<size_t>(bytes);
    return Status::ok();
  });
}

df11_status df11_cuda_compact_bf16_count(df11_model* model, const df11_exec_source* src,
                                         void* d_workspace, size_t workspace_bytes, void* stream,
                                         uint64_t* counts) {
  const char* what = "df11_cuda_compact_bf16_count";
  return on_exec(model, false, [&](auto) -> Status {
    if (counts == nullptr) return null_arg(what, "counts");
    DF11_RETURN_IF_ERROR(check_source(src, what));
    DF11_ASSIGN_OR_RETURN(
        const auto c,
        df11::cuda::compact_histogram(static_cast<const uint16_t*>(src->d_w), src->rows, src->cols,
                                      d_workspace, workspace_bytes, as_stream(stream)));
    std::memcpy(counts, c.data(), sizeof c);
    return Status::ok();
  });
}

df11_status df11_cuda_compact_bf16_measure(df11_model* model, const df11_exec_source* src,
                                           const uint8_t* lengths, void* d_workspace,
                                           size_t workspace_bytes, void* stream,
                                           df11_compact_matrix* out) {
  const char* what = "df11_cuda_compact_bf16_measure";
  return on_exec(model, false, [&](auto tag) -> Status {
    if (out == nullptr) return null_arg(what, "out");
    DF11_ASSIGN_OR_RETURN(
        const df11::cuda::CompactPlan plan,
        source_plan(tag, src, lengths, d_workspace, workspace_bytes, stream, what));
    *out = measured_matrix(plan.header);
    return Status::ok();
  });
}

df11_status df11_cuda_compact_bf16_pack(df11_model* model, const df11_exec_source* src,
                                        const uint8_t* lengths, void* d_workspace,
                                        size_t workspace_bytes, const df11_compact_matrix* m,
                                        void* stream) {
  const char* what = "df11_cuda_compact_bf16_pack";
  return on_exec(model, false, [&](auto tag) -> Status {
    if (m == nullptr) return null_arg(what, "m");
    DF11_ASSIGN_OR_RETURN(
        const df11::cuda::CompactPlan plan,
        source_plan(tag, src, lengths, d_workspace, workspace_bytes, stream, what));
    DF11_RETURN_IF_ERROR(check_measured(*m, plan.header, std::string(what) + ": the matrix"));
    DF11_RETURN_IF_ERROR(
        df11::cuda::launch_compact_pack(static_cast<const uint16_t*>(src->d_w), plan,
                                        static_cast<uint8_t*>(const_cast<void*>(m->d_blob)),
                                        d_workspace, workspace_bytes, as_stream(stream)));
    return df11::cuda::upload_compact_decode_table(
        plan.code, static_cast<uint32_t*>(const_cast<void*>(m->d_table)), as_stream(stream));
  });
}

df11_status df11_cuda_compact_gemm_ex(df11_model* model, const df11_compact_gemm* gemms, size_t n,
                                      uint32_t batch, void* d_status, size_t status_bytes,
                                      uint32_t flags, void* stream) {
  const char* what = "df11_cuda_compact_gemm";
  return on_exec(model, false, [&](auto any) -> Status {
    if (n != 0 && gemms == nullptr) return null_arg(what, "gemms");
    if (batch < 1 || batch > DF11_COMPACT_MAX_BATCH) {
      return invalid(std::string(what) + ": batch " + std::to_string(batch) + " is not within 1.." +
                     std::to_string(DF11_COMPACT_MAX_BATCH));
    }
    std::vector<df11::cuda::CompactGemm> g(n);
    for (size_t k = 0; k < n; ++k) {
      const std::string name = std::string(what) + ": matrix " + std::to_string(k);
      DF11_RETURN_IF_ERROR(check_matrix(gemms[k].w, name));
      if (gemms[k].d_x == nullptr || gemms[k].d_y == nullptr) {
        return invalid(name + ": d_x or d_y is null");
      }
      g[k] = {compact_matrix(gemms[k].w), static_cast<const uint16_t*>(gemms[k].d_x),
              static_cast<uint16_t*>(gemms[k].d_y)};
    }
    DF11_ASSIGN_OR_RETURN(uint32_t * word,
                          status_word(d_status, status_bytes, flags, stream, what, any));
    if (n == 0) return Status::ok();
    return df11::cuda::launch_compact_gemm(g, batch, word, as_stream(stream));
  });
}

df11_status df11_cuda_compact_to_bf16_ex(df11_model* model, const df11_compact_matrix* m,
                                         void* const* d_out, size_t n, void* d_status,
                                         size_t status_bytes, uint32_t flags, void* stream) {
  const char* what = "df11_cuda_compact_to_bf16";
  return on_exec(model, false, [&](auto any) -> Status {
    if (n != 0 && (m == nullptr || d_out == nullptr)) return null_arg(what, "m or d_out");
    for (size_t k = 0; k < n; ++k) {
      const std::string name = std::string(what) + ": matrix " + std::to_string(k);
      DF11_RETURN_IF_ERROR(check_matrix(m[k], name));
      if (d_out[k] == nullptr) return invalid(name + ": d_out is null");
    }
    DF11_ASSIGN_OR_RETURN(uint32_t * word,
                          status_word(d_status, status_bytes, flags, stream, what, any));
    for (size_t k = 0; k < n; ++k) {
      DF11_RETURN_IF_ERROR(df11::cuda::launch_compact_to_bf16(
          compact_matrix(m[k]), static_cast<uint16_t*>(d_out[k]), word, as_stream(stream)));
    }
    return Status::ok();
  });
}

df11_status df11_cuda_compact_status_sync(df11_model* model, const void* d_status, void* stream) {
  const char* what = "df11_cuda_compact_status_sync";
  return on_exec(model, false, [&](auto) -> Status {
    if (d_status == nullptr) return null_arg(what, "d_status");
    DF11_ASSIGN_OR_RETURN(const uint32_t word,
                          df11::cuda::read_compact_status(
                              reinterpret_cast<const uint32_t*>(
                                  static_cast<const uint8_t*>(d_status) + kCompactStatusOffset),
                              as_stream(stream)));
    if (word == 0) return Status::ok();
    return Status(ErrorCode::kCorruptData,
                  "a compact blob does not decode: a lane's bits hold no codeword, or its "
                  "codewords run past them (spec/EXEC_COMPACT.md)");
  });
}

}  // extern "C"
