// tbb::parallel_for for a worker object whose state was published before the loop.
//
// The system oneTBB is not built with ThreadSanitizer, so TSan cannot see that the closure
// TBB copies into its (recycled) task objects was written before a task reads it. The
// closure therefore holds only the worker's address and is read here alone, where
// tests/decoder/tsan.supp silences it by file; everything else a task reads belongs to the
// worker, which orders itself after its publisher with an acquire (see BlockDecoder).
#pragma once

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstdint>

namespace df11::detail {

// Calls worker->run(begin, end) over [0, n) in pieces of about `grain`.
template <class Worker>
void parallel_ranges(uint64_t n, uint64_t grain, Worker* worker) {
  tbb::parallel_for(
      tbb::blocked_range<uint64_t>(0, n, grain),
      [worker](const tbb::blocked_range<uint64_t>& r) { worker->run(r.begin(), r.end()); });
}

}  // namespace df11::detail
