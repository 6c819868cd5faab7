// DF11 encoder on the GPU (spec/DF11.md sections 2 and 3): codes a group whose BF16 weights
// are already in device memory (an engine's tensor-parallel slice, a weight its loader built)
// without a round trip through host memory. The outputs are byte for byte those of the CPU
// encoder (df11/encoder.h: encode_group) for the same weights: the code is built on the host
// from the histogram by the same build_code / build_luts, and the stream, gaps, output
// positions and sign/mantissa bytes are the spec's functions of the weights and the code.
//
// Three steps, on one CUDA stream:
//   1. device_histogram()      the exponent histogram (one small copy back; waits for it)
//   2. plan_device_encode()    host only: the code, its tables and every output's size
//   3. encode_on_device()      enqueues the coding into the caller's device buffers
// Nothing here allocates device memory: the caller passes a scratch of the plan's size.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "df11/encoder.h"
#include "df11/status.h"

namespace df11::cuda {

// Device scratch device_histogram() needs: 256 64-bit counters (8-byte aligned).
inline constexpr size_t kHistogramScratchBytes = 256 * sizeof(uint64_t);

// The exponent histogram of the n BF16 weights at d_weights (2-byte aligned). Enqueues the
// count on `stream` and waits for it (one 2 KiB copy). n >= 1.
Status device_histogram(const uint16_t* d_weights, uint64_t n, void* d_scratch,
                        size_t scratch_bytes, cudaStream_t stream, Histogram& out);

// What encode_on_device() writes, and what it needs.
struct DeviceEncodePlan {
  Code code;
  std::vector<uint8_t> luts;  // the group's luts tensor (spec 3.3), host memory
  uint64_t n_elements = 0;
  uint64_t n_bits = 0;                  // sum of code lengths
  uint64_t n_bytes = 0;                 // encoded_exponent: ceil(n_bits / 8)
  uint64_t n_blocks = 0;                // ceil(n_bytes / 4096)
  uint64_t gaps_bytes = 0;              // gap_bytes_for_blocks(n_blocks)
  uint64_t output_positions_bytes = 0;  // 4 * (n_blocks + 1)
  // The encoded_exponent buffer's capacity: n_bytes rounded up to 8 (the coder ORs whole
  // 32-bit words); only the first n_bytes are the group's.
  uint64_t encoded_exponent_capacity = 0;
  uint64_t scratch_bytes = 0;  // device scratch encode_on_device() needs
};

// The plan for n weights with histogram `histogram` (host only). kUncodable as build_code (an
// exponent >= 240); kInvalidArgument if n is 0, above 2^32 - 1 or not the histogram's total.
Result<DeviceEncodePlan> plan_device_encode(const Histogram& histogram, uint64_t n);

// The caller's device buffers for one group. encoded_exponent: plan.encoded_exponent_capacity
// bytes, 8-byte aligned; output_positions: 4-byte aligned; the others any alignment. All are
// written whole (encode_on_device zeroes what it ORs into).
struct DeviceEncodeOutput {
  uint8_t* encoded_exponent = nullptr;
  uint8_t* sign_mantissa = nullptr;     // plan.n_elements bytes
  uint8_t* output_positions = nullptr;  // plan.output_positions_bytes
  uint8_t* gaps = nullptr;              // plan.gaps_bytes
};

// Enqueues the coding of the weights `plan` was made for (the same d_weights) on `stream`: no
// allocation, no wait. d_scratch: plan.scratch_bytes, 8-byte aligned; it and the outputs must
// not be used by other work until the stream has run it.
Status encode_on_device(const uint16_t* d_weights, const DeviceEncodePlan& plan,
                        const DeviceEncodeOutput& out, void* d_scratch, size_t scratch_bytes,
                        cudaStream_t stream);

}  // namespace df11::cuda
