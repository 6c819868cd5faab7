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

#include "df11/cancel.h"
#include "df11/model_folder.h"
#include "df11/safetensors.h"
#include "df11/source_hasher.h"
#include "df11/status.h"
#include "file_stream.h"
#include "source_pages.h"

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
  // The tensor's bytes, held until the matching release(at) (calls pair up: a tensor may be
  // held twice, by a group and by the tied copy coding it again). A mapping gives them in
  // place; a source that must fetch them (from a reader) stages them in memory it owns, once
  // while they are held. Thread-safe (shards are written side by side).
  virtual Result<std::span<const uint8_t>> tensor_bytes(const TensorLocation& at) const = 0;
  // Ends one tensor_bytes(at) hold: a mapping drops the tensor's pages, staged bytes are freed
  // with the last hold.
  virtual void release(const TensorLocation& at) const = 0;
  // Where the tensor lies in a mapping, for dropping its pages as the encoder's steps move on
  // (source_pages.h); none (the default) for a source that maps nothing.
  virtual MemberSource member_source(const TensorLocation& /*at*/) const { return {}; }
  // Feeds the tensor's bytes to `sink` in steps of at most `step_bytes` (each resident only
  // while the sink works on it, nothing left after); stops with kInterrupted once `cancel` is
  // cancelled. Holds nothing. Thread-safe.
  virtual Status stream_tensor(const TensorLocation& at, const ByteSink& sink,
                               const CancelToken& cancel,
                               uint64_t step_bytes = kStreamStepBytes) const = 0;

  // ---- Everything else ----
  // Other files of the checkpoint (tokenizer, generation_config.json, ...): relative paths,
  // sorted; their total bytes; and writing them under `dir` at the same paths.
  virtual const std::vector<std::string>& side_files() const = 0;
  virtual uint64_t side_file_bytes() const = 0;
  virtual Status write_side_files(const std::filesystem::path& dir,
                                  const std::function<void(uint64_t)>& on_bytes,
                                  const CancelToken& cancel) const = 0;
  // The SHA-256 of the whole shard file as it is (or would be) on disk (spec 5.2 `sources`)
  // and the XXH3 of each of its tensors, in header order (the members' checksums). Called on
  // the source hasher's threads (several shards at once); stops with kInterrupted when `stop`
  // is set or `cancel` is cancelled. `read_ahead`: as hash_file (source_hasher.h).
  virtual Result<SourceDigests> shard_digests(size_t shard, const std::atomic<bool>* stop,
                                              const CancelToken& cancel, bool read_ahead) const = 0;
};

}  // namespace df11::app
