// What the host prepares for the CUDA decode kernel: validation of a group against its
// output, and the kernel-facing description (KernelGroup, decode_core.h) with its alignment
// facts. Host code only, no CUDA runtime: used by the launcher (df11_cuda) and by the kernel's
// host emulation (df11_cuda_host), which must describe groups identically.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "decode_core.h"
#include "df11/group.h"
#include "df11/status.h"

namespace df11::cuda::detail {

// Bytes of one staging buffer for blocks of up to `max_block_weights` weights: weight g
// goes to byte g - (op[b] & ~15), so up to 15 bytes of lead-in, rounded up to 16.
inline uint32_t staging_bytes_for(uint32_t max_block_weights) {
  return (max_block_weights + 15 + 15) / 16 * 16;
}

// The shortest code of the group's usable symbols (1..8; 8 when no root symbol is usable):
// every code the kernel accepts has at least this many bits (table_entry's min_length).
inline uint32_t shortest_code_length(const GroupInfo& info) {
  uint32_t shortest = 8;
  for (const uint8_t len : info.code_lengths) {
    if (len != 0 && len < shortest) shortest = len;
  }
  return shortest;
}

// validate_group() plus the check that the caller's output holds exactly n_elements weights.
Result<GroupInfo> validate_with_output(const GroupView& group, size_t out_size,
                                       const std::string& what);

// KernelGroup for host-validated sizes and the given (device or host) pointers.
KernelGroup make_kernel_group(const GroupView& host, const GroupInfo& info, const uint8_t* luts,
                              const uint8_t* stream, const uint8_t* sign_mantissa,
                              const uint8_t* output_positions, const uint8_t* gaps, uint16_t* out);

}  // namespace df11::cuda::detail
