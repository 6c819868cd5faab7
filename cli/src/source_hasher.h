// SHA-256 of the original shard files, computed on a background thread while the shards are
// planned and encoded (hashing a large model takes seconds of one core; the encoder keeps
// the other cores busy). Reads with read(2) in fixed steps: nothing stays resident.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "df11/status.h"

namespace df11::app {

class SourceHasher {
 public:
  // Starts hashing `paths` in order.
  explicit SourceHasher(std::vector<std::string> paths);
  ~SourceHasher();  // stops early and joins
  SourceHasher(const SourceHasher&) = delete;
  SourceHasher& operator=(const SourceHasher&) = delete;

  // Waits for file i's digest (64 lowercase hex) or its error; kInterrupted if a signal
  // stopped the work.
  Result<std::string> get(size_t i);

 private:
  void run();

  std::vector<std::string> paths_;
  std::vector<std::optional<Result<std::string>>> results_;
  std::mutex mutex_;
  std::condition_variable done_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// SHA-256 of one file, stopping with kInterrupted when a signal arrives or `stop` is set.
Result<std::string> sha256_file_interruptible(const std::string& path,
                                              const std::atomic<bool>* stop);

}  // namespace df11::app
