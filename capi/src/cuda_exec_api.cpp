// The C API's execution layout (df11/df11.h, experimental section) over df11::cuda's
// cuda_exec.h. Without the CUDA decoder every entry point reports DF11_ERROR_UNSUPPORTED and
// nothing of df11_cuda is referenced.
#include <string>
#include <vector>

#include "cuda_api_common.h"

using df11::ErrorCode;
using df11::Status;
using namespace df11::capi::cuda_api;

static_assert(DF11_EXEC_MAX_BATCH == df11::cuda::kExecMaxBatch);

namespace {

df11::cuda::ExecMatrix exec_matrix(const df11_exec_matrix& m) {
  return {static_cast<const uint8_t*>(m.d_blob), m.bytes, m.rows, m.cols, m.n_exceptions};
}

// The C sources as df11::cuda's (kInvalidArgument for a null array or device pointer).
Status exec_sources(const df11_exec_source* src, size_t n, const char* what,
                    std::vector<df11::cuda::ExecSource>& out) {
  if (n == 0) return Status(ErrorCode::kInvalidArgument, std::string(what) + ": no sources");
  if (src == nullptr) return null_arg(what, "src");
  out.resize(n);
  for (size_t k = 0; k < n; ++k) {
    if (src[k].d_w == nullptr) {
      return Status(ErrorCode::kInvalidArgument,
                    std::string(what) + ": source " + std::to_string(k) + ": d_w is null");
    }
    out[k] = {static_cast<const uint16_t*>(src[k].d_w), src[k].rows, src[k].cols};
  }
  return Status::ok();
}

}  // namespace

extern "C" {

df11_status df11_cuda_exec_workspace_bytes(df11_model* model, size_t group, size_t* n_matrices,
                                           size_t* workspace_bytes) {
  const char* what = "df11_cuda_exec_workspace_bytes";
  return on_exec(model, true, [&](auto) -> Status {
    if (n_matrices == nullptr || workspace_bytes == nullptr) return null_arg(what, "an output");
    std::vector<df11::capi::GemvMember> members;
    std::vector<df11::cuda::ExecShape> shapes;
    DF11_RETURN_IF_ERROR(group_shapes(*model, group, what, members, shapes));
    DF11_ASSIGN_OR_RETURN(const size_t bytes, df11::cuda::exec_group_workspace_bytes(
                                                  model->folder->groups[group].view, shapes));
    *n_matrices = shapes.size();
    *workspace_bytes = bytes;
    return Status::ok();
  });
}

df11_status df11_cuda_exec_measure(df11_model* model, size_t group, const df11_cuda_group* dev,
                                   void* d_workspace, size_t workspace_bytes, void* stream,
                                   df11_exec_matrix* out, const char** names, size_t n) {
  const char* what = "df11_cuda_exec_measure";
  return on_exec(model, true, [&](auto) -> Status {
    if (dev == nullptr) return null_arg(what, "dev");
    if (out == nullptr) return null_arg(what, "out");
    std::vector<df11::capi::GemvMember> members;
    std::vector<df11::cuda::ExecShape> shapes;
    DF11_RETURN_IF_ERROR(group_shapes(*model, group, what, members, shapes));
    DF11_RETURN_IF_ERROR(check_count(what, n, shapes.size()));
    const df11::cuda::DeviceGroup d = device_group(*model, group, *dev);
    std::vector<df11::cuda::ExecMeasure> meas(n);
    DF11_RETURN_IF_ERROR(df11::cuda::exec_measure_group(d, shapes, d_workspace, workspace_bytes,
                                                        as_stream(stream), meas));
    for (size_t k = 0; k < n; ++k) {
      out[k] = df11_exec_matrix{nullptr, static_cast<size_t>(meas[k].bytes), shapes[k].rows,
                                shapes[k].cols, meas[k].n_exceptions};
      if (names != nullptr) names[k] = member_name(*model, group, k);
    }
    return Status::ok();
  });
}

df11_status df11_cuda_exec_pack(df11_model* model, size_t group, void* d_workspace,
                                size_t workspace_bytes, const df11_exec_matrix* m, size_t n,
                                void* stream) {
  const char* what = "df11_cuda_exec_pack";
  return on_exec(model, true, [&](auto) -> Status {
    if (m == nullptr) return null_arg(what, "m");
    std::vector<df11::capi::GemvMember> members;
    std::vector<df11::cuda::ExecShape> shapes;
    DF11_RETURN_IF_ERROR(group_shapes(*model, group, what, members, shapes));
    DF11_RETURN_IF_ERROR(check_count(what, n, shapes.size()));
    std::vector<uint8_t*> blobs(n);
    for (size_t k = 0; k < n; ++k) {
      if (m[k].rows != shapes[k].rows || m[k].cols != shapes[k].cols) {
        return Status(ErrorCode::kInvalidArgument, std::string(what) + ": matrix " +
                                                       std::to_string(k) + " ('" + members[k].name +
                                                       "') is not the member's shape");
      }
      blobs[k] = static_cast<uint8_t*>(const_cast<void*>(m[k].d_blob));
    }
    return df11::cuda::launch_exec_pack_group(shapes, blobs, d_workspace, workspace_bytes,
                                              as_stream(stream));
  });
}

df11_status df11_cuda_exec_bf16_workspace_bytes(df11_model* model, const df11_exec_source* src,
                                                size_t n, size_t* workspace_bytes) {
  const char* what = "df11_cuda_exec_bf16_workspace_bytes";
  return on_exec(model, false, [&](auto) -> Status {
    if (workspace_bytes == nullptr) return null_arg(what, "workspace_bytes");
    std::vector<df11::cuda::ExecSource> sources;
    DF11_RETURN_IF_ERROR(exec_sources(src, n, what, sources));
    DF11_ASSIGN_OR_RETURN(*workspace_bytes, df11::cuda::exec_transcode_workspace_bytes(sources));
    return Status::ok();
  });
}

df11_status df11_cuda_exec_bf16_measure(df11_model* model, const df11_exec_source* src, size_t n,
                                        void* d_workspace, size_t workspace_bytes, void* stream,
                                        df11_exec_matrix* out) {
  const char* what = "df11_cuda_exec_bf16_measure";
  return on_exec(model, false, [&](auto) -> Status {
    if (out == nullptr) return null_arg(what, "out");
    std::vector<df11::cuda::ExecSource> sources;
    DF11_RETURN_IF_ERROR(exec_sources(src, n, what, sources));
    std::vector<df11::cuda::ExecMeasure> meas(n);
    DF11_RETURN_IF_ERROR(
        df11::cuda::exec_measure(sources, d_workspace, workspace_bytes, as_stream(stream), meas));
    for (size_t k = 0; k < n; ++k) {
      out[k] = df11_exec_matrix{nullptr, static_cast<size_t>(meas[k].bytes), src[k].rows,
                                src[k].cols, meas[k].n_exceptions};
    }
    return Status::ok();
  });
}

df11_status df11_cuda_exec_bf16_pack(df11_model* model, const df11_exec_source* src, size_t n,
                                     void* d_workspace, size_t workspace_bytes,
                                     const df11_exec_matrix* m, void* stream) {
  const char* what = "df11_cuda_exec_bf16_pack";
  return on_exec(model, false, [&](auto) -> Status {
    if (m == nullptr) return null_arg(what, "m");
    std::vector<df11::cuda::ExecSource> sources;
    DF11_RETURN_IF_ERROR(exec_sources(src, n, what, sources));
    std::vector<uint8_t*> blobs(n);
    for (size_t k = 0; k < n; ++k) {
      if (m[k].rows != src[k].rows || m[k].cols != src[k].cols || m[k].d_blob == nullptr) {
        return Status(ErrorCode::kInvalidArgument,
                      std::string(what) + ": matrix " + std::to_string(k) +
                          " is not its source's shape, or has no blob");
      }
      blobs[k] = static_cast<uint8_t*>(const_cast<void*>(m[k].d_blob));
    }
    return df11::cuda::launch_exec_pack(sources, blobs, d_workspace, workspace_bytes,
                                        as_stream(stream));
  });
}

df11_status df11_cuda_exec_to_bf16_ex(df11_model* model, const df11_exec_matrix* m,
                                      void* const* d_out, size_t n, void* d_status,
                                      size_t status_bytes, uint32_t flags, void* stream) {
  return on_exec(model, false, [&](auto) -> Status {
    if (n != 0 && (m == nullptr || d_out == nullptr)) {
      return null_arg("df11_cuda_exec_to_bf16", "m or d_out");
    }
    std::vector<df11::cuda::ExecToBf16> items(n);
    for (size_t k = 0; k < n; ++k) items[k] = {exec_matrix(m[k]), static_cast<uint16_t*>(d_out[k])};
    return df11::cuda::launch_exec_to_bf16(items, d_status, status_bytes, as_stream(stream),
                                           status_use(flags));
  });
}

df11_status df11_cuda_exec_to_bf16(df11_model* model, const df11_exec_matrix* m, void* const* d_out,
                                   size_t n, void* d_status, size_t status_bytes, void* stream) {
  return df11_cuda_exec_to_bf16_ex(model, m, d_out, n, d_status, status_bytes, 0, stream);
}

df11_status df11_cuda_exec_gemm_ld(df11_model* model, const df11_exec_gemm* gemms, size_t n,
                                   uint32_t batch, uint32_t ld_y, void* d_status,
                                   size_t status_bytes, uint32_t flags, void* stream) {
  return on_exec(model, false, [&](auto) -> Status {
    if (n != 0 && gemms == nullptr) return null_arg("df11_cuda_exec_gemm", "gemms");
    std::vector<df11::cuda::ExecGemm> g(n);
    for (size_t k = 0; k < n; ++k) {
      g[k] = {exec_matrix(gemms[k].w), static_cast<const uint16_t*>(gemms[k].d_x),
              static_cast<uint16_t*>(gemms[k].d_y), ld_y};
    }
    return df11::cuda::launch_exec_gemm(g, batch, d_status, status_bytes, as_stream(stream),
                                        status_use(flags));
  });
}

df11_status df11_cuda_exec_gemm_ex(df11_model* model, const df11_exec_gemm* gemms, size_t n,
                                   uint32_t batch, void* d_status, size_t status_bytes,
                                   uint32_t flags, void* stream) {
  return df11_cuda_exec_gemm_ld(model, gemms, n, batch, 0, d_status, status_bytes, flags, stream);
}

df11_status df11_cuda_exec_gemm(df11_model* model, const df11_exec_gemm* gemms, size_t n,
                                uint32_t batch, void* d_status, size_t status_bytes, void* stream) {
  return df11_cuda_exec_gemm_ex(model, gemms, n, batch, d_status, status_bytes, 0, stream);
}

df11_status df11_cuda_exec_status_reset(void* d_status, size_t status_bytes, void* stream) {
  return on_exec(nullptr, false, [&](auto) {
    return df11::cuda::reset_exec_status(d_status, status_bytes, as_stream(stream));
  });
}

df11_status df11_cuda_exec_status_sync(df11_model* model, const void* d_status, void* stream) {
  return on_exec(model, false,
                 [&](auto) { return df11::cuda::read_exec_status(d_status, as_stream(stream)); });
}

df11_status df11_cuda_exec_reference_gemm(df11_model* model, const void* d_w, uint32_t rows,
                                          uint32_t cols, const void* d_x, void* d_y, uint32_t batch,
                                          void* stream) {
  return on_exec(model, false, [&](auto) -> Status {
    const df11::cuda::Bf16Gemm g{static_cast<const uint16_t*>(d_w), rows, cols,
                                 static_cast<const uint16_t*>(d_x), static_cast<uint16_t*>(d_y)};
    return df11::cuda::launch_bf16_reference_gemm({&g, 1}, batch, as_stream(stream));
  });
}

}  // extern "C"
