// The CUDA decoder's kernel run on the host (library df11_cuda_host, built with or without
// CUDA): for testing and fuzzing the kernel's logic where there is no GPU or no nvcc.
// A test-support header, not part of the public API: tests and fuzz targets include it
// from decoder/cuda/support/ (DF11_CUDA_SUPPORT_DIR).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "df11/group.h"
#include "df11/status.h"

namespace df11::cuda {

// Decodes one group on the host with the exact algorithm and arithmetic of the CUDA kernel
// (same windows, prefix sums, checks and staging), for testing that logic where no GPU is.
// `out` must hold n_elements; same statuses as the GPU path. Runs on the calling thread and
// allocates its scratch memory (kResourceLimit if that fails); it is not fast.
Status decode_group_emulated(const GroupView& group, std::span<uint16_t> out,
                             const std::string& what);

}  // namespace df11::cuda
