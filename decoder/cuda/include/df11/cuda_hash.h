// XXH3_64bits on the GPU: the checksums df11's metadata records for stored tensors (spec
// 5.2), computed where the bytes already are after an upload, instead of a second read of
// them on the host. Host API: compiles with the host compiler, no CUDA headers.
//
// The kernel (xxh3_kernel.cu) takes one thread block per input: its threads sum every
// 1,024-byte block's eight accumulator terms in parallel, one warp runs the eight scramble
// chains in order (xxh3_core.h); an input's time is bound by its chain, about 30 dependent
// instructions per 1,024 bytes, and the inputs run side by side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "df11/status.h"

struct CUstream_st;

namespace df11::cuda {

// Bytes of device memory, and their count.
struct DeviceBytes {
  const void* d_data;
  uint64_t bytes;
};

// Device scratch xxh3_64_device needs for n inputs (16-byte aligned): each input's address
// and size, and its digest.
inline size_t xxh3_scratch_bytes(size_t n) { return n * (16 + 8); }

// digests[i] = XXH3_64bits (seed 0) of inputs[i], on the current device, in one launch on
// `stream`; synchronises it. Inputs above 240 bytes must be 16-byte aligned; an input of 0
// bytes may be null. kInvalidArgument for those, a short scratch or digests.size() !=
// inputs.size(); kCuda for a CUDA error.
Status xxh3_64_device(std::span<const DeviceBytes> inputs, void* d_scratch, size_t scratch_bytes,
                      CUstream_st* stream, std::span<uint64_t> digests);

}  // namespace df11::cuda
