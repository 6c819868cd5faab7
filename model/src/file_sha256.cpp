#include "df11/file_sha256.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "df11/sha256.h"

namespace df11::app {

Result<std::string> sha256_file_interruptible(const std::string& path,
                                              const std::atomic<bool>* stop,
                                              const CancelToken& cancel) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status(errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                  path + ": cannot open: " + std::strerror(errno));
  }
  constexpr size_t kStep = 4u << 20;
  std::vector<uint8_t> buffer(kStep);
  Sha256 sha;
  Status status;
  for (;;) {
    status = cancel.check();
    if (!status) break;
    if (stop != nullptr && stop->load(std::memory_order_relaxed)) {
      status = Status(ErrorCode::kInterrupted, path + ": hashing stopped");
      break;
    }
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = Status(ErrorCode::kIo, path + ": cannot read: " + std::strerror(errno));
      break;
    }
    if (n == 0) break;
    sha.update({buffer.data(), static_cast<size_t>(n)});
  }
  ::close(fd);
  if (!status) return status;
  return sha.hex_digest();
}

}  // namespace df11::app
