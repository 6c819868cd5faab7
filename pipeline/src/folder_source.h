// A checkpoint folder on disk as compress's source: the shards memory-mapped (ModelFolder),
// tensors read in place, pages dropped once used, side files copied, shards hashed with
// read(2) (hash_file).
#pragma once

#include <string>
#include <vector>

#include "checkpoint_source.h"
#include "df11/model_folder.h"

namespace df11::app {

class FolderSource final : public CheckpointSource {
 public:
  explicit FolderSource(const ModelFolder& folder) : folder_(folder) {}  // must outlive this

  std::string where() const override { return folder_.dir.string(); }
  size_t shard_count() const override { return folder_.shards.size(); }
  const std::string& shard_name(size_t shard) const override { return folder_.shard_names[shard]; }
  const SafetensorsHeader& header(size_t shard) const override {
    return folder_.shards[shard].header();
  }
  const std::optional<std::string>& config_text() const override { return folder_.config_text; }
  const std::optional<std::string>& index_text() const override { return folder_.index_text; }
  const std::string& index_name() const override { return folder_.index_name; }

  Result<std::span<const uint8_t>> tensor_bytes(const TensorLocation& at) const override;
  void release(const TensorLocation& at) const override;
  MemberSource member_source(const TensorLocation& at) const override;
  Status stream_tensor(const TensorLocation& at, const ByteSink& sink, const CancelToken& cancel,
                       uint64_t step_bytes) const override;

  const std::vector<std::string>& side_files() const override { return folder_.side_files; }
  uint64_t side_file_bytes() const override;
  Status write_side_files(const std::filesystem::path& dir,
                          const std::function<void(uint64_t)>& on_bytes,
                          const CancelToken& cancel) const override;
  Result<SourceDigests> shard_digests(size_t shard, const std::atomic<bool>* stop,
                                      const CancelToken& cancel, bool read_ahead) const override;

 private:
  const ModelFolder& folder_;
};

}  // namespace df11::app
