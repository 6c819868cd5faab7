// What a DecodePlan holds, shared by the plan builder (decode_plan.cpp) and the launcher
// (decode_kernel.cu). Private to df11_cuda.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "decode_core.h"
#include "df11/cuda_decoder.h"

namespace df11::cuda {

struct DecodePlan::Impl {
  std::vector<detail::KernelGroup> groups;  // first_block counts within each launch
  std::vector<std::string> names;
  uint64_t total_blocks = 0;
  uint64_t total_elements = 0;
  uint64_t stream_bytes = 0;
  uint32_t max_block_weights = 0;
  uint32_t staging_bytes = 0;  // one exponent staging buffer (two per thread block)
  uint32_t shared_bytes = 0;   // dynamic shared memory per thread block
  uint32_t ctas_per_sm = 0;
  bool compact = false;        // the kernel's compact configuration (see KernelConfig)
  uint32_t sm_count = 0;
  int device = 0;
  uint32_t epoch = 0;  // launches so far; the latest launch writes records with this value
};

namespace detail {

// Groups per kernel launch: their descriptions are kernel parameters (96 bytes each, within
// the 32 KiB parameter limit of CUDA 12.1+ on sm_70 and later).
inline constexpr uint32_t kMaxGroupsPerLaunch = 256;

// Bytes of one staging buffer for blocks of up to `max_block_weights` weights: weight g
// goes to byte g - (op[b] & ~15), so up to 15 bytes of lead-in, rounded up to 16.
inline uint32_t staging_bytes_for(uint32_t max_block_weights) {
  return (max_block_weights + 15 + 15) / 16 * 16;
}

// How the kernel runs on the current device for staging buffers of `staging_bytes`: the
// fast configuration (double-buffered, sign_mantissa staged through shared memory) or the
// compact one, as `choice` says (decode_kernel.cu). Raises the kernel's dynamic shared
// memory limit accordingly; kResourceLimit if the chosen configuration does not fit.
struct KernelConfig {
  bool compact = false;
  uint32_t shared_bytes = 0;  // dynamic shared memory per thread block
  uint32_t ctas_per_sm = 0;
};
Status configure_kernel(uint32_t staging_bytes, KernelChoice choice, KernelConfig& config);

// validate_group() plus the check that the caller's output holds exactly n_elements weights.
Result<GroupInfo> validate_with_output(const GroupView& group, size_t out_size,
                                       const std::string& what);

// Turns a status record written by the kernel (or the emulation) into a Status.
Status record_status(const GroupStatusRecord& rec, const std::string& what);

// KernelGroup for host-validated sizes and the given (device or host) pointers.
KernelGroup make_kernel_group(const GroupView& host, const GroupInfo& info,
                              const uint8_t* luts, const uint8_t* stream,
                              const uint8_t* sign_mantissa, const uint8_t* output_positions,
                              const uint8_t* gaps, uint16_t* out);

}  // namespace detail
}  // namespace df11::cuda
