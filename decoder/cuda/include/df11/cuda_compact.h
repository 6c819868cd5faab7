// The compact execution layout on the GPU (spec/EXEC_COMPACT.md): decoding a blob back to BF16.
// Host API: compiles with the host compiler, no CUDA headers (streams are CUstream_st*). It
// takes the caller's stream and device memory, allocates nothing and only enqueues.
//
// The kernel (compact_kernel.cu) shares its per-lane arithmetic with a host emulation
// (decoder/cuda/host/compact_core.h), which the CPU tests check against the reference
// decoder; the kernel itself has not run on a GPU yet.
#pragma once

#include <cstdint>

#include "df11/exec_compact.h"
#include "df11/status.h"

struct CUstream_st;

namespace df11::cuda {

// One blob on the device and what the host knows of it (from the header it wrote or checked).
struct CompactMatrix {
  const uint8_t* d_blob = nullptr;    // total_bytes, 4-byte aligned
  const uint16_t* d_table = nullptr;  // CompactCode::table of its code lengths, 4,096 entries
  uint32_t rows = 0, cols = 0;
  uint64_t stream_bits = 0;
};

// d_out (rows x cols BF16, row-major) <- the blob's weights, one warp per tile. *d_status
// (4 bytes of device memory, zeroed by the caller) gets bit 0 set where a lane's bits held no
// codeword or its codewords ran past its bits (a corrupt blob; the output is then wrong). Reads
// stay inside the blob and the table, writes inside d_out, whatever the blob holds.
// kInvalidArgument for a shape outside the limits or a null pointer.
Status launch_compact_to_bf16(const CompactMatrix& m, uint16_t* d_out, uint32_t* d_status,
                              CUstream_st* stream);

}  // namespace df11::cuda
