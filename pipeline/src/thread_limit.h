// --threads N: caps TBB's parallelism for the lifetime of the object (0 = all cores).
#pragma once

#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <cstddef>
#include <memory>

namespace df11::app {

// The thread budget in force (--threads, or all cores): TBB's global limit.
inline size_t allowed_threads() {
  return tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
}

// Helper threads of our own (file hashing, files rebuilt side by side) beside TBB's: one per
// four allowed threads, at least one, at most `most`; none under --threads 1, where the
// caller does that work on its own thread (one thread computes, as asked).
inline size_t helper_threads(size_t most) {
  const size_t allowed = allowed_threads();
  if (allowed <= 1) return 0;
  const size_t n = allowed / 4;
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

// Runs `work` under --threads `threads` (0: all cores) and returns its result: TBB's global
// limit (what allowed_threads() reports) plus, for a positive count, an arena of that
// concurrency for the work, which no more threads can join (with the global limit alone, a
// worker already attached to the default arena was seen entering it).
template <class Work>
auto run_with_thread_limit(int threads, Work&& work) -> decltype(work()) {
  ThreadLimit limit(threads);
  if (threads <= 0) return work();
  tbb::task_arena arena(threads);
  return arena.execute(work);
}

}  // namespace df11::app
