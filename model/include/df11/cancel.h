// Cooperative cancellation: the front end (a signal handler, a GUI button, an engine's
// shutdown) calls cancel(); long-running library loops poll check() between bounded steps
// and unwind with kInterrupted, while RAII owners (StagingDir, OutputFile) remove partial
// output on the way out. The library never installs handlers or looks at signals itself.
#pragma once

#include <atomic>
#include <string>

#include "df11/status.h"

namespace df11::app {

class CancelToken {
 public:
  CancelToken() = default;
  // A token for a sub-task that its owner can stop alone, and that also stops when `parent`
  // does (push stops its verify pass when an upload fails; SIGINT stops both).
  explicit CancelToken(const CancelToken* parent) : parent_(parent) {}
  CancelToken(const CancelToken&) = delete;
  CancelToken& operator=(const CancelToken&) = delete;

  // Requests cancellation; `reason` ("SIGINT", "user request") must outlive the token (a
  // string literal). Lock-free and async-signal-safe: a single atomic store.
  void cancel(const char* reason) noexcept { reason_.store(reason, std::memory_order_relaxed); }

  bool cancelled() const noexcept {
    return reason_.load(std::memory_order_relaxed) != nullptr ||
           (parent_ != nullptr && parent_->cancelled());
  }

  // kInterrupted naming the reason once cancel() was called (here or on the parent), OK
  // otherwise (one atomic load per token). The parent's reason wins when both were called:
  // it is the cause (a sub-task that stopped its siblings after the parent was cancelled
  // must not report the siblings' stop as the reason).
  Status check() const {
    if (parent_ != nullptr && parent_->cancelled()) return parent_->check();
    const char* reason = reason_.load(std::memory_order_relaxed);
    if (reason == nullptr) return Status::ok();
    return Status(ErrorCode::kInterrupted, std::string("interrupted by ") + reason);
  }

  // Clears a request (tests that run several commands in one process).
  void reset() noexcept { reason_.store(nullptr, std::memory_order_relaxed); }

  // A token nobody cancels, for callers without a way to stop.
  static const CancelToken& never();

 private:
  static_assert(std::atomic<const char*>::is_always_lock_free);
  std::atomic<const char*> reason_{nullptr};
  const CancelToken* parent_ = nullptr;
};

inline const CancelToken& CancelToken::never() {
  static const CancelToken token;
  return token;
}

}  // namespace df11::app
