#include "source_hasher.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

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

SourceHasher::SourceHasher(std::vector<std::string> paths, size_t max_threads,
                           const CancelToken& cancel)
    : paths_(std::move(paths)), cancel_(cancel), results_(paths_.size()) {
  const size_t n = std::min(paths_.size(), max_threads);
  for (size_t t = 0; t < n; ++t) threads_.emplace_back([this] { run(); });
}

SourceHasher::~SourceHasher() {
  stop_.store(true);
  for (std::thread& t : threads_) t.join();
}

void SourceHasher::run() {
  for (size_t i = next_.fetch_add(1); i < paths_.size(); i = next_.fetch_add(1)) {
    // After a stop or a cancellation the remaining files fail fast with kInterrupted.
    Result<std::string> digest = sha256_file_interruptible(paths_[i], &stop_, cancel_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      results_[i].emplace(std::move(digest));
    }
    done_.notify_all();
  }
}

Result<std::string> SourceHasher::get(size_t i) {
  if (threads_.empty()) return sha256_file_interruptible(paths_.at(i), &stop_, cancel_);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return results_[i].has_value(); });
  return *results_[i];
}

}  // namespace df11::app
