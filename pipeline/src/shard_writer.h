// Pass 2 of compression for one output shard's items (compress_layout.h), in file order, as
// a two-stage pipeline: one stage codes the next step of a group (all threads, through the
// encoder's chunks) while the other writes the previous unit out (a coded step, a raw
// tensor, or a group's small tensors and checksums). Several shards run this side by side
// (compress.cpp), so that the writes of one file, which its lock serialises, overlap the
// coding of the others.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint_source.h"
#include "compress_layout.h"
#include "compress_plan.h"
#include "df11/cancel.h"
#include "df11/reporter.h"
#include "df11/safetensors.h"
#include "file_writer.h"
#include "phase_times.h"

namespace df11::app {

// Writes every item of `out` at its place in `layout` through `writer` and fills in the
// checksums of out.metadata, the members' only with `hash_members` (else the source hasher has
// them). `step_weights`: weights
// coded per step (two steps' output and input pages are resident at a time). Per-group lines for -v
// are appended to `details`. Progress advances by the input bytes written. Stops with kInterrupted
// once `cancel` is cancelled.
Status write_shard_items(const CheckpointSource& source, const CompressPlan& plan, ShardOut& out,
                         const FinalizedLayout& layout, const FileWriter& writer,
                         uint64_t step_weights, bool hash_members, Reporter& reporter,
                         const CancelToken& cancel, std::vector<std::string>& details,
                         PhaseTimes* phases = nullptr);

// Bytes resident for one shard written by write_shard_items, beyond the process's base: two
// steps' stored bytes (about 1.4 bytes per weight) and up to two steps' input pages.
inline uint64_t shard_pipeline_bytes(uint64_t step_weights) { return 6 * step_weights; }

}  // namespace df11::app
