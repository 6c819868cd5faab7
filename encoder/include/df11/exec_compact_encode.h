// BF16 -> compact execution layout on the CPU (spec/EXEC_COMPACT.md section 4): the reference
// encoder.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "df11/exec_compact.h"
#include "df11/status.h"

namespace df11 {

// The code lengths an encoder writes (spec 4.1) for `exponent_counts` (BF16 exponent -> count,
// padding positions counted as exponent 0): optimal lengths of at most 12 bits by
// package-merge (ties broken by exponent), length 1 for a lone exponent, 8 for each where all
// 256 occur.
// Deterministic. kInvalidArgument where every count is 0.
Result<std::array<uint8_t, kCompactSymbols>> choose_compact_lengths(
    std::span<const uint64_t, kCompactSymbols> exponent_counts);

// Encodes a row-major BF16 matrix (rows * cols patterns, any values: NaN payloads, +-0, +-Inf
// and subnormals round-trip) into a blob of the compact layout, with the lengths
// choose_compact_lengths gives. kInvalidArgument for a shape outside the limits or a size
// mismatch. `what` names the matrix in messages. Deterministic.
Result<std::vector<uint8_t>> encode_compact_matrix(std::span<const uint16_t> weights, uint32_t rows,
                                                   uint32_t cols, const std::string& what);

// The same with given code lengths (kInvalidArgument where they are no code, spec C1, or leave
// an exponent of the matrix, or 0 where it has padding, without a code): every valid blob is
// exactly encode_compact_matrix_with_lengths(its weights, its shape, its lengths) (spec 3: a
// valid blob is canonical), which the validator's fuzz target checks.
Result<std::vector<uint8_t>> encode_compact_matrix_with_lengths(
    std::span<const uint16_t> weights, uint32_t rows, uint32_t cols,
    std::span<const uint8_t, kCompactSymbols> lengths, const std::string& what);

}  // namespace df11
