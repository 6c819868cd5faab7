// Runs transfers on `control.threads` workers, one HttpSession (one reused connection) each,
// stopping every worker at the first failure; and serialises progress reports.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>

#include "df11/hub/hub.h"
#include "http_client.h"

namespace df11::hub {

// Calls work(session, i) for i in [0, count) on up to control.threads threads. Returns the
// first failure (by time), or OK. A failure stops the rest through the sessions' abort flag;
// their kInterrupted is not reported in place of the real error.
Status run_parallel(const HubConfig& config, const TransferControl& control, size_t count,
                    const std::function<Status(HttpSession&, size_t)>& work);

// Shared progress counters; report() calls the caller's callback at most every 100 ms unless
// `force`, from whichever thread, one at a time.
class ProgressMeter {
 public:
  ProgressMeter(const TransferControl& control, uint64_t bytes_total, int files_total);
  void add_bytes(uint64_t n) {
    bytes_.fetch_add(n, std::memory_order_relaxed);
    report(false);
  }
  void file_done() {
    files_.fetch_add(1, std::memory_order_relaxed);
    report(true);
  }
  void report(bool force);

 private:
  const TransferControl& control_;
  const uint64_t bytes_total_;
  const int files_total_;
  std::atomic<uint64_t> bytes_{0};
  std::atomic<int> files_{0};
  std::mutex mutex_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace df11::hub
