#include "source_hasher.h"

#include <algorithm>
#include <utility>

namespace df11::app {

SourceHasher::SourceHasher(size_t count, HashFn hash, size_t max_threads)
    : hash_(std::move(hash)), results_(count) {
  const size_t n = std::min(count, max_threads);
  for (size_t t = 0; t < n; ++t) threads_.emplace_back([this] { run(); });
}

SourceHasher::~SourceHasher() {
  stop_.store(true);
  for (std::thread& t : threads_) t.join();
}

void SourceHasher::run() {
  for (size_t i = next_.fetch_add(1); i < results_.size(); i = next_.fetch_add(1)) {
    // After a stop or a cancellation the remaining files fail fast with kInterrupted.
    Result<std::string> digest = hash_(i, &stop_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      results_[i].emplace(std::move(digest));
    }
    done_.notify_all();
  }
}

Result<std::string> SourceHasher::get(size_t i) {
  if (threads_.empty()) return hash_(i, &stop_);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return results_[i].has_value(); });
  return *results_[i];
}

}  // namespace df11::app
