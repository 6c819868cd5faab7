// The BF16 checkpoint compress reads, wherever it is: a folder on disk (folder_source.h: the
// shards memory-mapped) or tensors in memory that a caller describes (memory_source.h: the
// tools C API, Python's df11.compress). The layout is what the files hold, or would hold if
// they were written: shard names, each shard's safetensors header as parsed from its bytes,
// config.json and the index; so the planner, the shard layout and the record see the same
// thing either way, and the output is the same bytes. Only the tensors' bytes, the side files
// and the shards' SHA-256 come through the source's own code.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cancel.h"
#include "df11/safetensors.h"
#include "df11/status.h"
#include "file_stream.h"
#include "model_folder.h"

namespace df11::app {

class CheckpointSource {
 public:
  virtual ~CheckpointSource() = default;

  // ---- Layout (cheap, no tensor bytes read) ----
  // Where the checkpoint is, for messages: the folder's path, or "checkpoint in memory".
  virtual std::string where() const = 0;
  // The shards, sorted by name (bytes), and their headers as the files hold them.
  virtual size_t shard_count() const = 0;
  virtual const std::string& shard_name(size_t shard) const = 0;
  virtual const SafetensorsHeader& header(size_t shard) const = 0;
  virtual const std::optional<std::string>& config_text() const = 0;
  virtual const std::optional<std::string>& index_text() const = 0;
  virtual const std::string& index_name() const = 0;  // kIndexFile or kDiffusersIndexFile

  const TensorInfo& tensor(const TensorLocation& at) const {
    return header(at.shard).tensors[at.tensor];
  }
  // Every tensor in original file order: by shard name, then data offset.
  std::vector<TensorLocation> tensors_in_file_order() const;

  // ---- Tensor bytes ----
  // The tensor's bytes, valid until release(at) or the source's end. A mapping gives them in
  // place; a source that must fetch them (from a reader) stages them in memory it owns.
  // Called from one thread at a time.
  virtual Result<std::span<const uint8_t>> tensor_bytes(const TensorLocation& at) const = 0;
  // The caller is done with the tensor for now (a mapping drops its pages; staged bytes are
  // freed). Idempotent; tensor_bytes() may be called again later.
  virtual void release(const TensorLocation& at) const = 0;
  // The caller is done with bytes [offset, offset + length) of the tensor (the encoder's
  // steps, so that a large group does not stay resident while it is written). Best effort.
  virtual void release_range(const TensorLocation& /*at*/, uint64_t /*offset*/,
                             uint64_t /*length*/) const {}
  // Feeds the tensor's bytes to `sink` in bounded steps (each resident only while the sink
  // works on it); stops with kInterrupted once `cancel` is cancelled. Thread-safe: the
  // shards' SHA-256 streams tensors on helper threads while the compressor works.
  virtual Status stream_tensor(const TensorLocation& at, const ByteSink& sink,
                               const CancelToken& cancel) const = 0;

  // ---- Everything else ----
  // Other files of the checkpoint (tokenizer, generation_config.json, ...): relative paths,
  // sorted; their total bytes; and writing them under `dir` at the same paths.
  virtual const std::vector<std::string>& side_files() const = 0;
  virtual uint64_t side_file_bytes() const = 0;
  virtual Status write_side_files(const std::filesystem::path& dir,
                                  const std::function<void(uint64_t)>& on_bytes,
                                  const CancelToken& cancel) const = 0;
  // SHA-256 (64 lowercase hex) of the whole shard file as it is (or would be) on disk, for
  // the record (spec 7.7 `sources`). Called on helper threads; stops with kInterrupted when
  // `stop` is set or `cancel` is cancelled.
  virtual Result<std::string> shard_sha256(size_t shard, const std::atomic<bool>* stop,
                                           const CancelToken& cancel) const = 0;
};

}  // namespace df11::app
