// df11 compress: a Hugging Face BF16 checkpoint folder -> a DF11 model folder.
//
// The original files' SHA-256 (and their tensors' XXH3) start at once as tasks of the thread
// budget (source_hasher.h). Pass 1 plans every group (compress_plan.h) and lays out every
// shard's header (compress_layout.h); pass 2 writes several shards side by side, each a
// pipeline that codes a group's next step while the previous one is written at its place
// (shard_writer.h, group_writer.h) and copies raw tensors, then writes the final headers,
// config.json (+ dfloat11_config), the index and the side files. Everything goes to
// "<OUT_DIR>.df11-tmp-<pid>", renamed onto OUT_DIR only when complete (output_dir.h). The
// bytes do not depend on the thread count.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "cancel.h"
#include "df11/encoder.h"
#include "df11/status.h"
#include "grouping.h"
#include "reporter.h"

namespace df11::app {

struct CompressOptions {
  std::filesystem::path model_dir;
  std::filesystem::path out_dir;
  GroupBy group_by = GroupBy::kBlock;
  bool force = false;  // replace an existing OUT_DIR (only once the new one is complete)
  int threads = 0;     // 0: all cores
  // Weights encoded per step: bounds resident memory (per shard written side by side, two
  // steps' output and input pages, under 6 bytes per step weight: ~100 MB).
  uint64_t step_weights = uint64_t{16} << 20;
  // Weights per encoder chunk (the unit of parallel encoding; tests use small ones to get
  // many chunks and steps out of a small model).
  uint64_t chunk_weights = kDefaultChunkWeights;
};

struct CompressSummary {
  size_t shards = 0;
  size_t tensors = 0;
  size_t groups_coded = 0;
  size_t tensors_coded = 0;         // members of coded groups
  size_t groups_raw = 0;            // groups left unchanged (uncodable, over a limit)
  size_t tensors_raw = 0;           // every tensor stored unchanged
  uint64_t input_bytes = 0;         // original .safetensors files
  uint64_t output_bytes = 0;        // DF11 .safetensors files
  uint64_t coded_input_bytes = 0;   // BF16 bytes of coded members
  uint64_t coded_output_bytes = 0;  // their six stored tensors
  // Tied copies (spec 5.3 G8: a tied lm_head coded again for the dfloat11 loader), counted
  // in output_bytes but in none of the above.
  std::vector<std::string> tied_copies;  // "lm_head.weight = model.embed_tokens.weight"
  uint64_t tied_copy_bytes = 0;          // their six stored tensors
  double seconds = 0;
};

// Reports progress, per-group details and warnings on `reporter`; stops with kInterrupted
// (removing the partial output) once `cancel` is cancelled.
Result<CompressSummary> compress_model(const CompressOptions& options, Reporter& reporter,
                                       const CancelToken& cancel);

}  // namespace df11::app
