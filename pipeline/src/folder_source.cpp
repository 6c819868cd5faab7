#include "folder_source.h"

#include <system_error>

#include "file_sha256.h"

namespace df11::app {
namespace fs = std::filesystem;

Result<std::span<const uint8_t>> FolderSource::tensor_bytes(const TensorLocation& at) const {
  return folder_.shards[at.shard].tensor_bytes(tensor(at));
}

void FolderSource::release(const TensorLocation& at) const {
  folder_.shards[at.shard].release(tensor(at));
}

void FolderSource::release_range(const TensorLocation& at, uint64_t offset, uint64_t length) const {
  folder_.shards[at.shard].mapped().advise_dontneed(tensor(at).file_offset + offset, length);
}

Status FolderSource::stream_tensor(const TensorLocation& at, const ByteSink& sink,
                                   const CancelToken& cancel) const {
  const TensorInfo& t = tensor(at);
  return stream_file_range(folder_.shards[at.shard].mapped(), t.file_offset, t.byte_size(), sink,
                           cancel);
}

uint64_t FolderSource::side_file_bytes() const {
  uint64_t total = 0;
  for (const std::string& rel : folder_.side_files) {
    std::error_code ec;
    const uint64_t size = fs::file_size(folder_.dir / rel, ec);
    if (!ec) total += size;
  }
  return total;
}

Status FolderSource::write_side_files(const fs::path& dir,
                                      const std::function<void(uint64_t)>& on_bytes,
                                      const CancelToken& cancel) const {
  return copy_side_files(folder_.dir, dir, folder_.side_files, on_bytes, cancel);
}

Result<std::string> FolderSource::shard_sha256(size_t shard, const std::atomic<bool>* stop,
                                               const CancelToken& cancel) const {
  return sha256_file_interruptible(folder_.shard_path(shard), stop, cancel);
}

}  // namespace df11::app
