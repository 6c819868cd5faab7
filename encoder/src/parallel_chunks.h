// The one way encoder code runs work in parallel: a tbb::parallel_for over chunk indices.
#pragma once

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstdint>

#if defined(__SANITIZE_THREAD__)
#define DF11_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DF11_TSAN 1
#endif
#endif

#ifdef DF11_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace df11 {

// Calls f(c) for every c in [first, last), in parallel, in the caller's task arena. Returns
// after all calls. Under ThreadSanitizer it also declares the fork and join edges: the system
// libtbb is not instrumented, so TSAN cannot see that the calls happen after the caller's
// earlier writes and before its later reads. There is deliberately no edge between two calls,
// so races between chunks stay visible.
template <typename F>
void parallel_for_chunks(uint64_t first, uint64_t last, F&& f) {
#ifdef DF11_TSAN
  char fork = 0, join = 0;
  __tsan_release(&fork);
#endif
  tbb::parallel_for(tbb::blocked_range<uint64_t>(first, last),
                    [&](const tbb::blocked_range<uint64_t>& r) {
#ifdef DF11_TSAN
                      __tsan_acquire(&fork);
#endif
                      for (uint64_t c = r.begin(); c != r.end(); ++c) f(c);
#ifdef DF11_TSAN
                      __tsan_release(&join);
#endif
                    });
#ifdef DF11_TSAN
  __tsan_acquire(&join);
#endif
}

}  // namespace df11
