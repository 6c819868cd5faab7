// Execution layout -> BF16 on the CPU (spec/EXEC_LAYOUT.md section 2.5): the reference decode
// the GPU's exec -> BF16 kernel and fused GEMM are checked against.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "df11/exec_compact.h"
#include "df11/exec_layout.h"
#include "df11/status.h"

namespace df11 {

// Validates the blob in full (validate_exec_matrix) and writes its rows * cols BF16 patterns,
// row-major, into `out` (size must equal rows * cols: kInvalidArgument otherwise). Any
// invalid blob is reported (kBadGroup / kTruncated, naming `what`) before anything is written.
Status decode_exec_matrix(std::span<const uint8_t> blob, std::span<uint16_t> out,
                          const std::string& what);

// The same for the compact layout (spec/EXEC_COMPACT.md): validate_compact_matrix in full,
// then the rows * cols BF16 patterns into `out`; nothing is written for an invalid blob.
Status decode_compact_matrix(std::span<const uint8_t> blob, std::span<uint16_t> out,
                             const std::string& what);

}  // namespace df11
