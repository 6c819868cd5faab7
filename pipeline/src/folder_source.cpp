#include "folder_source.h"

#include <system_error>

namespace df11::app {
namespace fs = std::filesystem;

Result<std::span<const uint8_t>> FolderSource::tensor_bytes(const TensorLocation& at) const {
  return folder_.shards[at.shard].tensor_bytes(tensor(at));
}

void FolderSource::release(const TensorLocation& at) const {
  folder_.shards[at.shard].release(tensor(at));
}

MemberSource FolderSource::member_source(const TensorLocation& at) const {
  return {&folder_.shards[at.shard].mapped(), tensor(at).file_offset};
}

Status FolderSource::stream_tensor(const TensorLocation& at, const ByteSink& sink,
                                   const CancelToken& cancel, uint64_t step_bytes) const {
  const TensorInfo& t = tensor(at);
  DF11_RETURN_IF_ERROR(stream_file_range(folder_.shards[at.shard].mapped(), t.file_offset,
                                         t.byte_size(), sink, cancel, step_bytes));
  // Each step's pages went as it was read; sweep the fault-around pages at the edges.
  folder_.shards[at.shard].release(t);
  return Status::ok();
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

Result<SourceDigests> FolderSource::shard_digests(size_t shard, const std::atomic<bool>* stop,
                                                  const CancelToken& cancel,
                                                  bool read_ahead) const {
  std::vector<ByteRange> tensors;
  for (const TensorInfo& t : header(shard).tensors)
    tensors.push_back({t.file_offset, t.byte_size()});
  return hash_file(folder_.shard_path(shard), tensors, stop, cancel, read_ahead);
}

}  // namespace df11::app
