// The one way encoder code runs work in parallel: a tbb::parallel_for over chunk indices.
#pragma once

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstdint>

#include "df11/tsan_edges.h"

namespace df11 {

// Calls f(c) for every c in [first, last), in parallel, in the caller's task arena. Returns
// after all calls. Under ThreadSanitizer it also declares the fork and join edges: the system
// libtbb is not instrumented, so TSAN cannot see that the calls happen after the caller's
// earlier writes and before its later reads. There is deliberately no edge between two calls,
// so races between chunks stay visible.
template <typename F>
void parallel_for_chunks(uint64_t first, uint64_t last, F&& f) {
  char fork = 0, join = 0;
  detail::tsan_release(&fork);
  tbb::parallel_for(tbb::blocked_range<uint64_t>(first, last),
                    [&](const tbb::blocked_range<uint64_t>& r) {
                      detail::tsan_acquire(&fork);
                      for (uint64_t c = r.begin(); c != r.end(); ++c) f(c);
                      detail::tsan_release(&join);
                    });
  detail::tsan_acquire(&join);
}

}  // namespace df11
