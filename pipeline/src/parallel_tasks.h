// The pipelines' own parallel steps on TBB (two pieces of work side by side; n tasks at
// most at once), with the fork and join edges declared to ThreadSanitizer (df11/tsan_edges.h).
// Each task runs isolated: while it waits for its own parallel loops it runs only their
// pieces, never a whole other task, which would hold it up for as long as that one takes.
#pragma once

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_invoke.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <cstddef>

#include "df11/tsan_edges.h"

namespace df11::app {

// Runs f() and g() side by side (either may run on the calling thread) and returns when both
// have.
template <class F, class G>
void run_side_by_side(F&& f, G&& g) {
  char fork = 0, join = 0;
  df11::detail::tsan_release(&fork);
  auto wrap = [&](auto& work) {
    return [&] {
      df11::detail::tsan_acquire(&fork);
      tbb::this_task_arena::isolate([&] { work(); });
      df11::detail::tsan_release(&join);
    };
  };
  tbb::parallel_invoke(wrap(f), wrap(g));
  df11::detail::tsan_acquire(&join);
}

// Calls task(i) for every i in [0, n), as parallel TBB tasks, and returns when all have.
template <class F>
void run_tasks(size_t n, F&& task) {
  char fork = 0, join = 0;
  df11::detail::tsan_release(&fork);
  // One index per task (simple_partitioner, grain 1): tasks are long, and two in one TBB
  // task would run one after the other.
  tbb::parallel_for(
      tbb::blocked_range<size_t>(0, n, 1),
      [&](const tbb::blocked_range<size_t>& r) {
        df11::detail::tsan_acquire(&fork);
        for (size_t i = r.begin(); i != r.end(); ++i) {
          tbb::this_task_arena::isolate([&] { task(i); });
        }
        df11::detail::tsan_release(&join);
      },
      tbb::simple_partitioner());
  df11::detail::tsan_acquire(&join);
}

}  // namespace df11::app
