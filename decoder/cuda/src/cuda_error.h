// CUDA runtime errors as df11::Status (kCuda), with the call site and the runtime's own text.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "df11/status.h"

namespace df11::cuda::detail {

inline Status cuda_status(cudaError_t err, const std::string& where) {
  if (err == cudaSuccess) return Status::ok();
  return Status(ErrorCode::kCuda,
                where + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

}  // namespace df11::cuda::detail

// Returns a kCuda Status from the enclosing function if `call` fails; `where` says what.
#define DF11_CUDA_RETURN_IF_ERROR(call, where) \
  DF11_RETURN_IF_ERROR(::df11::cuda::detail::cuda_status((call), (where)))
