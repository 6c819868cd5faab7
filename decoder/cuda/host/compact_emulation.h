// The compact layout's decode kernel (compact_kernel.cu) run on the host, lane by lane, with
// the kernel's arithmetic (compact_core.h): for tests without a GPU. Not fast.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "df11/exec_compact.h"
#include "df11/status.h"

namespace df11::cuda {

// Decodes a blob (its header read and checked, H1..H5, then trusted as the kernel trusts it)
// into `out` (rows x cols) through `table` (CompactCode::table of its code lengths). Returns
// kCorruptData naming `what` where a lane's bits held no codeword or its codewords ran past
// its bits, as the kernel's status flag says; `out` then holds wrong weights, and nothing was
// read or written outside the blob and `out`.
Status compact_to_bf16_emulated(std::span<const uint8_t> blob,
                                std::span<const uint16_t, 1u << kCompactMaxCodeBits> table,
                                std::span<uint16_t> out, const std::string& what);

}  // namespace df11::cuda
