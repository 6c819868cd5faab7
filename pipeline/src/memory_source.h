// A checkpoint in memory as compress's source (compress.h, CheckpointInMemory): each shard's
// header laid out and parsed back as if the file existed, tensors read where the caller keeps
// them (or staged from its reader, one group at a time), side files written from their
// contents, and each shard's SHA-256 (and its tensors' XXH3) computed over the bytes its file
// would hold.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint_source.h"
#include "df11/compress.h"

namespace df11::app {

class MemorySource final : public CheckpointSource {
 public:
  // Checks the whole description (compress_checkpoint's list) and lays out every shard.
  // `checkpoint` must outlive the source.
  static Result<std::unique_ptr<MemorySource>> create(const CheckpointInMemory& checkpoint);

  std::string where() const override;
  size_t shard_count() const override { return shards_.size(); }
  const std::string& shard_name(size_t shard) const override { return shards_[shard].name; }
  const SafetensorsHeader& header(size_t shard) const override { return shards_[shard].header; }
  const std::optional<std::string>& config_text() const override { return config_text_; }
  const std::optional<std::string>& index_text() const override { return index_text_; }
  const std::string& index_name() const override { return index_name_; }

  Result<std::span<const uint8_t>> tensor_bytes(const TensorLocation& at) const override;
  void release(const TensorLocation& at) const override;
  Status stream_tensor(const TensorLocation& at, const ByteSink& sink, const CancelToken& cancel,
                       uint64_t step_bytes) const override;

  const std::vector<std::string>& side_files() const override { return side_files_; }
  uint64_t side_file_bytes() const override;
  Status write_side_files(const std::filesystem::path& dir,
                          const std::function<void(uint64_t)>& on_bytes,
                          const CancelToken& cancel) const override;
  Result<SourceDigests> shard_digests(size_t shard, const std::atomic<bool>* stop,
                                      const CancelToken& cancel, bool read_ahead) const override;

 private:
  MemorySource() = default;

  struct Shard {
    std::string name;
    SafetensorsHeader header;                      // parsed from `prefix`
    std::vector<uint8_t> prefix;                   // the file's bytes before the data
    std::vector<const CheckpointTensor*> tensors;  // parallel to header.tensors
  };
  const CheckpointTensor& described(const TensorLocation& at) const {
    return *shards_[at.shard].tensors[at.tensor];
  }
  // Reads bytes [offset, offset + dst.size()) of a tensor given by a reader, in steps.
  Status read(const TensorLocation& at, uint64_t offset, std::span<uint8_t> dst) const;
  std::string what(const TensorLocation& at) const;  // "model.safetensors: tensor 'x'"

  std::vector<Shard> shards_;  // sorted by name
  std::optional<std::string> config_text_;
  std::optional<std::string> index_text_;
  std::string index_name_;
  std::vector<std::string> side_files_;                 // sorted
  std::map<std::string, const std::string*> contents_;  // side file -> its bytes

  mutable std::mutex read_mutex_;  // readers are called one at a time
  struct Staged {
    std::unique_ptr<uint8_t[]> bytes;
    size_t holds = 0;
  };
  mutable std::mutex staged_mutex_;
  mutable std::map<std::pair<size_t, size_t>, Staged> staged_;  // reader tensors being held
};

}  // namespace df11::app
