// BF16 -> execution layout on the CPU (spec/EXEC_LAYOUT.md section 4): the reference encoder.
// The GPU transcode (decoder/cuda, cuda_exec.h) writes the same bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "df11/exec_layout.h"
#include "df11/status.h"

namespace df11 {

// The window base an encoder writes (spec 4.1): the base in 0..Max_Base whose window
// [base, base + 14] holds the most weights by `exponent_counts` (BF16 exponent -> count),
// the smallest such base on a tie.
uint32_t choose_exec_base(std::span<const uint64_t, 256> exponent_counts);

// Encodes a row-major BF16 matrix (rows * cols patterns, any values: NaN payloads, +-0, +-Inf
// and subnormals round-trip) into a blob of the execution layout. kInvalidArgument for a
// shape outside the limits or a size mismatch, kUncodable beyond 2^32 - 1 exceptions. `what`
// names the matrix in messages. Deterministic: the same input gives the same bytes.
Result<std::vector<uint8_t>> encode_exec_matrix(std::span<const uint16_t> weights, uint32_t rows,
                                                uint32_t cols, const std::string& what);

// The same with a given window base (0..Max_Base, else kInvalidArgument): every valid blob is
// exactly encode_exec_matrix_with_base(its weights, its shape, its base) (spec 3: a valid
// blob is canonical), which the validator's fuzz target checks.
Result<std::vector<uint8_t>> encode_exec_matrix_with_base(std::span<const uint16_t> weights,
                                                          uint32_t rows, uint32_t cols,
                                                          uint32_t base, const std::string& what);

}  // namespace df11
