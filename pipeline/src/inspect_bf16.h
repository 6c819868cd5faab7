// `df11 inspect` on a plain BF16 checkpoint: what `df11 compress` would make of it, predicted
// exactly from exponent histograms and codes (no coding, no output).
#pragma once

#include "df11/inspect_report.h"
#include "df11/model_folder.h"
#include "df11/status.h"

namespace df11::app {

// Fills report.groups (the block-mode groups of df11 compress, planned by the compressor's own
// pass 1: same grouping, same codes, same raw fallbacks), report.tensors (every BF16 tensor
// that joins a group, predicted as a group of its own), report.raw, report.files, and, when
// `zstd` is set, the zstd baselines of every group member. Reads each member tensor two or
// three times (plan, per-tensor plan, zstd) on the current TBB arena.
Status predict_bf16_checkpoint(const ModelFolder& folder, bool zstd, InspectReport& report,
                               const CancelToken& cancel);

// The FileReports of a folder's shards.
void describe_files(const ModelFolder& folder, InspectReport& report);

}  // namespace df11::app
