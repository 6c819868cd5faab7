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

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <new>

#include "df11/decoder.h"

namespace df11::detail {

// Calls worker->run(begin, end) over [0, n) in pieces of about `grain`.
template <class Worker>
void parallel_ranges(uint64_t n, uint64_t grain, Worker* worker) {
  tbb::parallel_for(
      tbb::blocked_range<uint64_t>(0, n, grain),
      [worker](const tbb::blocked_range<uint64_t>& r) { worker->run(r.begin(), r.end()); });
}

// The same on a caller's team (CpuTeam): each of its threads takes the next `grain` pieces
// until none is left. The team's runner is a C function, so nothing may leave `take`
// by an exception: one thrown by a piece is held and thrown as std::bad_alloc (the only
// exception a worker's pieces throw) once the team has returned.
template <class Worker>
void team_ranges(const CpuTeam& team, uint64_t n, uint64_t grain, Worker* worker) {
  struct Shared {
    Worker* worker;
    uint64_t n, grain;
    std::atomic<uint64_t> next{0};
    std::atomic<bool> failed{false};
  } shared{worker, n, std::max<uint64_t>(grain, 1)};
  auto take = [](void* arg) {
    auto* s = static_cast<Shared*>(arg);
    for (;;) {
      const uint64_t begin = s->next.fetch_add(s->grain, std::memory_order_relaxed);
      if (begin >= s->n) return;
      try {
        s->worker->run(begin, std::min(s->n, begin + s->grain));
      } catch (...) {
        s->failed.store(true, std::memory_order_relaxed);
      }
    }
  };
  if (team.run == nullptr || team.threads < 2) {
    take(&shared);
  } else {
    team.run(take, &shared, team.threads, 0);
  }
  if (shared.failed.load(std::memory_order_relaxed)) throw std::bad_alloc();
}

}  // namespace df11::detail
