// df11_tools_cuda_encode_* (df11/df11_tools.h): the GPU encoder (encoder/cuda) at the C
// boundary. Without it in the build (DF11_HAVE_CUDA unset) every call reports
// DF11_ERROR_UNSUPPORTED.
#include <cstring>
#include <new>
#include <optional>

#include "df11/df11_tools.h"
#include "error_state.h"

#ifndef DF11_HAVE_CUDA
#define DF11_HAVE_CUDA 0
#endif
#if DF11_HAVE_CUDA
#include "df11/cuda_encoder.h"
#endif

using df11::ErrorCode;
using df11::Status;

struct df11_cuda_encoding {
  df11::capi::ErrorState err;
#if DF11_HAVE_CUDA
  std::optional<df11::cuda::DeviceEncodePlan> plan;
#endif
};

#if !DF11_HAVE_CUDA
namespace {

Status unsupported() {
  return Status(ErrorCode::kUnsupported, "this df11-tools library was built without CUDA");
}

}  // namespace
#endif

extern "C" {

df11_status df11_tools_cuda_encode_plan(const void* d_weights, uint64_t n, void* d_scratch,
                                        size_t scratch_bytes, void* stream,
                                        df11_cuda_encoding** out) {
  if (out == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  *out = nullptr;
  auto* enc = new (std::nothrow) df11_cuda_encoding();
  if (enc == nullptr) return DF11_ERROR_RESOURCE_LIMIT;
  *out = enc;
  return df11::capi::guarded(enc->err, [&]() -> Status {
#if DF11_HAVE_CUDA
    df11::Histogram hist{};
    DF11_RETURN_IF_ERROR(df11::cuda::device_histogram(static_cast<const uint16_t*>(d_weights), n,
                                                      d_scratch, scratch_bytes,
                                                      static_cast<cudaStream_t>(stream), hist));
    DF11_ASSIGN_OR_RETURN(df11::cuda::DeviceEncodePlan plan,
                          df11::cuda::plan_device_encode(hist, n));
    enc->plan.emplace(std::move(plan));
    return Status::ok();
#else
    (void)d_weights, (void)n, (void)d_scratch, (void)scratch_bytes, (void)stream;
    return unsupported();
#endif
  });
}

void df11_tools_cuda_encoding_free(df11_cuda_encoding* enc) { delete enc; }

const char* df11_tools_cuda_encoding_errmsg(const df11_cuda_encoding* enc) {
  return enc == nullptr ? "encoding handle is NULL" : enc->err.last_message();
}

df11_status df11_tools_cuda_encoding_sizes(const df11_cuda_encoding* enc,
                                           df11_cuda_encoding_sizes* out) {
  if (enc == nullptr || out == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
#if DF11_HAVE_CUDA
  if (!enc->plan) return DF11_ERROR_INVALID_ARGUMENT;
  const df11::cuda::DeviceEncodePlan& p = *enc->plan;
  out->n_elements = p.n_elements;
  out->luts_bytes = p.luts.size();
  out->encoded_exponent_bytes = p.n_bytes;
  out->encoded_exponent_capacity = p.encoded_exponent_capacity;
  out->sign_mantissa_bytes = p.n_elements;
  out->output_positions_bytes = p.output_positions_bytes;
  out->gaps_bytes = p.gaps_bytes;
  out->scratch_bytes = p.scratch_bytes;
  return DF11_OK;
#else
  return DF11_ERROR_UNSUPPORTED;
#endif
}

const uint8_t* df11_tools_cuda_encoding_luts(const df11_cuda_encoding* enc) {
#if DF11_HAVE_CUDA
  if (enc != nullptr && enc->plan) return enc->plan->luts.data();
#else
  (void)enc;
#endif
  return nullptr;
}

df11_status df11_tools_cuda_encode(df11_cuda_encoding* enc, const void* d_weights,
                                   void* d_encoded_exponent, void* d_sign_mantissa,
                                   void* d_output_positions, void* d_gaps, void* d_scratch,
                                   size_t scratch_bytes, void* stream) {
  if (enc == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  return df11::capi::guarded(enc->err, [&]() -> Status {
#if DF11_HAVE_CUDA
    if (!enc->plan) return Status(ErrorCode::kInvalidArgument, "the encode's plan failed");
    df11::cuda::DeviceEncodeOutput o;
    o.encoded_exponent = static_cast<uint8_t*>(d_encoded_exponent);
    o.sign_mantissa = static_cast<uint8_t*>(d_sign_mantissa);
    o.output_positions = static_cast<uint8_t*>(d_output_positions);
    o.gaps = static_cast<uint8_t*>(d_gaps);
    return df11::cuda::encode_on_device(static_cast<const uint16_t*>(d_weights), *enc->plan, o,
                                        d_scratch, scratch_bytes,
                                        static_cast<cudaStream_t>(stream));
#else
    (void)d_weights, (void)d_encoded_exponent, (void)d_sign_mantissa, (void)d_output_positions,
        (void)d_gaps, (void)d_scratch, (void)scratch_bytes, (void)stream;
    return unsupported();
#endif
  });
}

}  // extern "C"
