// Private to format/: the POSIX read-side plumbing shared by MappedFile, read_file_to_string
// and sha256_file (open a regular file, read it in chunks retrying EINTR).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>

#include "df11/status.h"

namespace df11::detail {

// Owns a file descriptor; closes it on destruction. Move-only.
class ScopedFd {
 public:
  explicit ScopedFd(int fd = -1) : fd_(fd) {}
  ScopedFd(ScopedFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept;
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd();
  int get() const { return fd_; }

 private:
  int fd_;
};

struct OpenedFile {
  ScopedFd fd;
  uint64_t size = 0;  // bytes, from fstat
};

// Opens `path` read-only; kNotFound if it does not exist, kIo if it is not a regular file
// or cannot be opened (errno text in the message).
Result<OpenedFile> open_regular_file(const std::string& path);

// Reads from the current position to end of file in chunks of at most chunk_bytes, calling
// on_chunk for each; stops early with its Status if it returns an error.
Status read_all_chunks(int fd, const std::string& path, size_t chunk_bytes,
                       const std::function<Status(std::span<const uint8_t>)>& on_chunk);

}  // namespace df11::detail
