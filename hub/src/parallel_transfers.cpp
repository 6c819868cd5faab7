#include "parallel_transfers.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace df11::hub {

Status run_parallel(const HubConfig& config, const TransferControl& control, size_t count,
                    const std::function<Status(HttpSession&, size_t)>& work) {
  std::atomic<size_t> next{0};
  std::atomic<bool> abort{false};
  std::mutex mutex;
  Status first;
  auto worker = [&] {
    HttpSession session(config, control, &abort);
    for (;;) {
      const size_t i = next.fetch_add(1);
      if (i >= count || abort.load()) return;
      Status s = work(session, i);
      if (!s.is_ok()) {
        std::lock_guard<std::mutex> lock(mutex);
        // A worker stopped by another's failure reports kInterrupted: keep the real error.
        if (first.is_ok() && !(abort.load() && s.code() == ErrorCode::kInterrupted)) first = s;
        abort.store(true);
        return;
      }
    }
  };
  const size_t threads = std::min<size_t>(std::max(1, control.threads), std::max<size_t>(count, 1));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (first.is_ok() && control.cancelled && control.cancelled()) {
    return Status(ErrorCode::kInterrupted, "interrupted");
  }
  return first;
}

ProgressMeter::ProgressMeter(const TransferControl& control, uint64_t bytes_total, int files_total)
    : control_(control), bytes_total_(bytes_total), files_total_(files_total) {}

void ProgressMeter::report(bool force) {
  if (!control_.progress) return;
  const auto now = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {
    if (!force) return;
    lock.lock();
  }
  if (!force && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  TransferProgress p;
  p.bytes_done = std::min(bytes_.load(), bytes_total_);
  p.bytes_total = bytes_total_;
  p.files_done = files_.load();
  p.files_total = files_total_;
  control_.progress(p);
}

}  // namespace df11::hub
