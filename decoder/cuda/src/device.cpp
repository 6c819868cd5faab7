// Whether a CUDA device can be used by this process.
#include <cuda_runtime_api.h>

#include <string>

#include "df11/cuda_decoder.h"

namespace df11::cuda {

bool device_available(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (why != nullptr) {
      *why = std::string("CUDA runtime: ") + cudaGetErrorName(err) + " (" +
             cudaGetErrorString(err) + ")";
    }
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
