// Whether a CUDA device can be used by this process.
#include <cuda_runtime_api.h>

#include <string>

#include "df11/cuda_decoder.h"

namespace df11::cuda {

namespace {

// "12.4" from CUDA's 12040.
std::string version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// What a failed cudaGetDeviceCount means for the user: the runtime's "insufficient driver"
// also stands for no driver at all, which cudaDriverGetVersion tells apart (0: none).
std::string unavailable_reason(cudaError_t err) {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  if (driver == 0 && (err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice ||
                      err == cudaErrorInitializationError)) {
    return "no NVIDIA driver found";
  }
  if (err == cudaErrorInsufficientDriver) {
    return "the NVIDIA driver supports CUDA " + version_text(driver) + ", this df11 needs " +
           version_text(runtime) + " or later: update the driver";
  }
  if (err == cudaErrorNoDevice) return "no NVIDIA GPU found";
  return std::string("CUDA runtime: ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
         ")";
}

}  // namespace

bool device_available(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (why != nullptr) *why = unavailable_reason(err);
    cudaGetLastError();  // clear the sticky error for later callers
    return false;
  }
  if (count == 0) {
    if (why != nullptr) *why = "no CUDA device";
    return false;
  }
  return true;
}

}  // namespace df11::cuda
