// SHA-256 of the original shard files, computed on background threads while the shards are
// planned and encoded (SHA-256 runs at ~1.5-2 GB/s per core and cannot be split within a
// file, so files are hashed side by side, in order of need). Reads with read(2) in fixed
// steps: nothing stays resident.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cancel.h"
#include "df11/status.h"

namespace df11::app {

class SourceHasher {
 public:
  // Starts hashing `paths` in order, up to `max_threads` files at a time; with 0 threads,
  // get() hashes the file it is asked for on the caller's thread.
  SourceHasher(std::vector<std::string> paths, size_t max_threads, const CancelToken& cancel);
  ~SourceHasher();  // stops early and joins
  SourceHasher(const SourceHasher&) = delete;
  SourceHasher& operator=(const SourceHasher&) = delete;

  // Waits for file i's digest (64 lowercase hex) or its error; kInterrupted if the token
  // stopped the work.
  Result<std::string> get(size_t i);

 private:
  void run();

  std::vector<std::string> paths_;
  const CancelToken& cancel_;
  std::vector<std::optional<Result<std::string>>> results_;
  std::mutex mutex_;
  std::condition_variable done_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> next_{0};  // next file to hash
  std::vector<std::thread> threads_;
};

}  // namespace df11::app
