// df11 compress: a Hugging Face BF16 checkpoint -> a DF11 model folder. The checkpoint is a
// folder (compress_model) or tensors in memory that the caller describes (compress_checkpoint:
// the tools C API, Python's df11.compress); both read it through one CheckpointSource
// (checkpoint_source.h) and write the same bytes for the same checkpoint.
//
// The original files' SHA-256 (and their tensors' XXH3) start at once as tasks of the thread
// budget (source_hasher.h), when options.source_sha256 is on. Pass 1 plans every group
// (compress_plan.h) and lays out every shard's header (compress_layout.h); pass 2 writes several
// shards side by side, each a pipeline that codes a group's next step while the previous one is
// written at its place (shard_writer.h, group_writer.h) and copies raw tensors, then writes the
// final headers, config.json (+ dfloat11_config), the index and the side files. Everything goes to
// "<OUT_DIR>.df11-tmp-<pid>", renamed onto OUT_DIR only when complete (output_dir.h). The
// bytes do not depend on the thread count.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "df11/cancel.h"
#include "df11/dtype.h"
#include "df11/encoder.h"
#include "df11/grouping.h"
#include "df11/reporter.h"
#include "df11/safetensors.h"
#include "df11/status.h"

namespace df11::app {

// The largest automatic step (CompressOptions::step_weights = 0), reached from 16 threads on.
inline constexpr uint64_t kMaxAutoStepWeights = uint64_t{16} << 20;

struct CompressOptions {
  std::filesystem::path model_dir;  // compress_model only
  std::filesystem::path out_dir;
  GroupBy group_by = GroupBy::kBlock;
  bool force = false;  // replace an existing OUT_DIR (only once the new one is complete)
  int threads = 0;     // 0: all cores
  // Weights encoded per step: bounds resident memory (per shard written side by side, two
  // steps' output and input pages, under 6 bytes per step weight). 0: one encoder chunk per
  // thread (--threads, or all cores), at most kMaxAutoStepWeights (~100 MB a shard). Small
  // steps keep a step's output in the CPU caches until it is hashed and written, and touch
  // fewer fresh pages: on 2 cores 2 Mi weights cost 8% less CPU than 16 Mi.
  uint64_t step_weights = 0;
  // Weights per encoder chunk (the unit of parallel encoding; tests use small ones to get
  // many chunks and steps out of a small model).
  uint64_t chunk_weights = kDefaultChunkWeights;
  // Record each original file's SHA-256 in `sources` (--source-sha256; spec 5.3: optional
  // from 1.2 on; provenance, e.g. the Hub's LFS oid of the original). Off by default: the
  // folder fixes the rebuilt bytes without it (checked header and every tensor's XXH3, spec
  // 7.6), so the SHA-256 can always be recomputed from a rebuild, while computing it costs a
  // third read of every file and ~0.5 CPU-s per GB, and, sequential within a file, bounds
  // compress on many cores by the largest file's hash time. Off, the originals are read only
  // by the planning and coding passes, and the members' XXH3 are computed while coding.
  bool source_sha256 = false;
};

struct CompressSummary {
  size_t shards = 0;
  size_t tensors = 0;
  size_t groups_coded = 0;
  size_t tensors_coded = 0;         // members of coded groups
  size_t groups_raw = 0;            // groups left unchanged (uncodable, over a limit)
  size_t tensors_raw = 0;           // every tensor stored unchanged
  uint64_t input_bytes = 0;         // original .safetensors files (as they would be on disk)
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

// ---- A checkpoint in memory ----

// Fills `dst` with bytes [offset, offset + dst.size()) of one tensor. Called with at most
// 64 MiB at a time, and never twice at once for one checkpoint (calls are
// serialised), from the compressing thread or a hashing thread.
using TensorReader = std::function<Status(uint64_t offset, std::span<uint8_t> dst)>;

struct CheckpointTensor {
  std::string name;  // as in the state dict: "model.layers.0.mlp.up_proj.weight"
  Dtype dtype = Dtype::kBF16;
  std::vector<uint64_t> shape;
  uint64_t byte_size = 0;  // must be tensor_byte_size(dtype, shape)
  // The bytes (little-endian, contiguous, as a safetensors file holds them), the caller's
  // until compress_checkpoint returns; or null, and `read` gives them (e.g. from a GPU).
  const uint8_t* data = nullptr;
  TensorReader read;
};

struct CheckpointShard {
  std::string name;                         // "model.safetensors", "model-00001-of-00002...."
  std::vector<CheckpointTensor> tensors;    // in file order
  std::optional<MetadataEntries> metadata;  // the header's __metadata__ (none: no such key)
};

// What save_pretrained would write, without writing it: the shards' tensors (a shard's header
// is laid out as df11 and the safetensors library write it: compact JSON in the given order,
// padded with spaces to 8 bytes) and every other file by relative path and content.
struct CheckpointInMemory {
  std::vector<CheckpointShard> shards;
  // config.json (required), the index when there are several shards, anything else
  // (generation_config.json, tokenizer files, "sub/dir/file").
  std::vector<std::pair<std::string, std::string>> files;
};

// Checks one tensor on its own: a name (UTF-8, not "__metadata__"), byte_size equal to what
// dtype and shape need, bytes or a reader. kInvalidArgument / kBadShape / kOverflow naming it.
Status check_checkpoint_tensor(const CheckpointTensor& tensor);

// Splits `tensors` (in order) into shards as huggingface_hub's
// split_torch_state_dict_into_shards does: a new shard when the next tensor would take the
// current one over `max_shard_bytes` (0: no limit), a larger tensor alone; one shard is
// "model.safetensors", several "model-00001-of-0000N.safetensors" with an index
// (model.safetensors.index.json: metadata.total_size and the weight_map) added to
// `checkpoint.files`. Every shard's __metadata__ is {"format": "pt"}, as transformers writes.
// kInvalidArgument if `checkpoint` already has shards or an index.
Status shard_checkpoint(std::vector<CheckpointTensor> tensors, uint64_t max_shard_bytes,
                        CheckpointInMemory& checkpoint);

// Writes exactly what compress_model writes for the same checkpoint saved as files (same
// groups, pattern_dict, metadata, record, bytes), reading the tensors where they are: the
// BF16 files are never written. Checks the whole description first (every tensor, unique
// names, shard and file names, config.json present, the index against the shards, BF16
// weights present) and writes nothing unless it is usable; errors name the tensor or file.
// `options.model_dir` is not used.
Result<CompressSummary> compress_checkpoint(const CheckpointInMemory& checkpoint,
                                            const CompressOptions& options, Reporter& reporter,
                                            const CancelToken& cancel);

}  // namespace df11::app
