#include "source_hasher.h"

#include <algorithm>
#include <utility>

#include "file_sha256.h"

namespace df11::app {

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
