// The huggingface_hub cache layout and its file operations (POSIX): blobs/<etag>,
// snapshots/<commit>/<path> -> ../../blobs/<etag>, refs/<revision>, .locks/<repo>/<etag>.lock;
// and --local-dir's .cache/huggingface/download/<path>.metadata records.
#pragma once

#include <cstdint>
#include <string>

#include "df11/status.h"

namespace df11::hub {

struct CachePaths {
  std::string storage;   // <cache>/models--org--name
  std::string lock_dir;  // <cache>/.locks/models--org--name
  std::string blob(const std::string& etag) const { return storage + "/blobs/" + etag; }
  std::string snapshot(const std::string& commit) const { return storage + "/snapshots/" + commit; }
};
CachePaths cache_paths(const std::string& cache_dir, const std::string& repo_id);

// mkdir -p (kIo naming the folder).
Status make_dirs(const std::string& dir);

// An exclusive flock held until destruction (the lock file stays, as huggingface_hub's do).
class FileLock {
 public:
  static Result<FileLock> acquire(const std::string& path);
  FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// "<path>.<8 random hex>.incomplete".
std::string incomplete_name(const std::string& path);

// Size of a regular file (following links), or -1.
int64_t file_size_or_minus1(const std::string& path);

// snapshots/<commit>/<repo_path> -> relative link to blobs/<etag>, replaced atomically.
Status link_snapshot_file(const CachePaths& paths, const std::string& commit,
                          const std::string& repo_path, const std::string& etag);

// Writes `text` to `path` through a temp file and rename.
Status write_file_atomic(const std::string& path, const std::string& text);

// Reads a small text file (at most 4 KiB); empty if absent.
std::string read_small_file(const std::string& path);

// fdatasync + close + rename (kIo naming the file).
Status finish_and_rename(int fd, const std::string& from, const std::string& to);

}  // namespace df11::hub
