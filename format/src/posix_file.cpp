#include "posix_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "posix_error.h"

namespace df11::detail {

ScopedFd& ScopedFd::operator=(ScopedFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

ScopedFd::~ScopedFd() {
  if (fd_ >= 0) ::close(fd_);
}

Result<OpenedFile> open_regular_file(const std::string& path) {
  OpenedFile f;
  f.fd = ScopedFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.fd.get() < 0) return errno_status(ErrorCode::kIo, path, "cannot open", errno);
  struct stat st;
  if (fstat(f.fd.get(), &st) != 0) return errno_status(ErrorCode::kIo, path, "cannot stat", errno);
  if (!S_ISREG(st.st_mode)) return Status(ErrorCode::kIo, path + ": not a regular file");
  f.size = static_cast<uint64_t>(st.st_size);
  return f;
}

Status read_all_chunks(int fd, const std::string& path, size_t chunk_bytes,
                       const std::function<Status(std::span<const uint8_t>)>& on_chunk) {
  std::vector<uint8_t> buf(chunk_bytes);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_status(ErrorCode::kIo, path, "cannot read", errno);
    }
    if (n == 0) return Status::ok();
    DF11_RETURN_IF_ERROR(on_chunk({buf.data(), static_cast<size_t>(n)}));
  }
}

}  // namespace df11::detail
