// df11 inspect's analysis: where the bits of a checkpoint go (the report; cli/ renders it).
//
// PATH is a DF11 folder, a plain BF16 checkpoint folder, or a single .safetensors file.
//  - DF11: per group, the stored bytes by part, the ratio vs BF16, the code-length table with
//    exponent counts (each group is decoded once to count them), the exponent entropy and the
//    ratio bound it implies, and the fullest block against the dfloat11 loader's limit.
//  - BF16: the same, predicted exactly for what `df11 compress` would write (its grouping, its
//    codes, its raw fallbacks), per group and per tensor alone; `zstd` adds zstd's ratio on
//    the same bytes at levels 3 (every byte) and 19 (first 256 KiB of each tensor).
#pragma once

#include <string>

#include "df11/cancel.h"
#include "df11/inspect_report.h"
#include "df11/reporter.h"
#include "df11/status.h"

namespace df11::app {

struct InspectOptions {
  std::string path;
  bool zstd = false;  // the zstd baseline (BF16 checkpoints only; a note otherwise)
  int threads = 0;    // 0: all cores
  // DF11 folders: groups and sizes from the headers and metadata alone, without decoding
  // every group to count its exponents (no code statistics: what push's model card needs).
  bool headers_only = false;
};

// Builds the report. Errors name the file and tensor; kInterrupted once `cancel` is cancelled.
Result<InspectReport> inspect_model(const InspectOptions& options, Reporter& reporter,
                                    const CancelToken& cancel);

}  // namespace df11::app
