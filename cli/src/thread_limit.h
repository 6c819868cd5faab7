// --threads N: caps TBB's parallelism for the lifetime of the object (0 = all cores).
#pragma once

#include <tbb/global_control.h>

#include <cstddef>
#include <memory>

namespace df11::app {

// The thread budget in force (--threads, or all cores): TBB's global limit.
inline size_t allowed_threads() {
  return tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
}

// Helper threads of our own (file hashing, files rebuilt side by side) beside TBB's: one per
// four allowed threads, at least one, at most `most`.
inline size_t helper_threads(size_t most) {
  const size_t n = allowed_threads() / 4;
  return n < 1 ? 1 : (n > most ? most : n);
}

class ThreadLimit {
 public:
  explicit ThreadLimit(int threads) {
    if (threads > 0) {
      control_ = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                       static_cast<size_t>(threads));
    }
  }

 private:
  std::unique_ptr<tbb::global_control> control_;
};

}  // namespace df11::app
