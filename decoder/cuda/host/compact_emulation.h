// The compact layout's decode kernel (compact_kernel.cu) run on the host, lane by lane, with
// the kernel's arithmetic (compact_core.h): for tests without a GPU. Not fast.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

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

// The GPU transcode from BF16 (compact_pack.cu) run on the host with its arithmetic
// (compact_pack_core.h): the exponents' counts over the padded matrix (padding as exponent 0),
// which the caller turns into code lengths (choose_compact_lengths, df11_encoder) ...
std::array<uint64_t, kCompactSymbols> compact_histogram_emulated(std::span<const uint16_t> w,
                                                                 uint32_t rows, uint32_t cols);
// ... and the blob with those lengths, lane by lane as the kernels write it (the same bytes as
// encode_compact_matrix_with_lengths). kInvalidArgument for a shape outside the limits, a size
// mismatch, or lengths that are no code or leave an exponent of the matrix without a codeword.
Result<std::vector<uint8_t>> compact_pack_emulated(
    std::span<const uint16_t> w, uint32_t rows, uint32_t cols,
    std::span<const uint8_t, kCompactSymbols> lengths, const std::string& what);

}  // namespace df11::cuda
