// Happens-before edges for ThreadSanitizer around df11's parallel loops. The system libtbb is
// not instrumented, so TSan cannot see that a task runs after its caller's earlier writes and
// before its later reads; df11's loops declare those fork and join edges themselves: the
// encoder's (encoder/src/parallel_chunks.h), the compress policy's block limits and the
// pipelines' (pipeline/src/parallel_tasks.h). It is public here, in the lowest layer that uses
// it, for the layers above. No-ops without TSan.
#pragma once

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

namespace df11::detail {

// Every tsan_release(x) happens before every later tsan_acquire(x).
inline void tsan_release([[maybe_unused]] void* edge) {
#ifdef DF11_TSAN
  __tsan_release(edge);
#endif
}
inline void tsan_acquire([[maybe_unused]] void* edge) {
#ifdef DF11_TSAN
  __tsan_acquire(edge);
#endif
}

}  // namespace df11::detail
