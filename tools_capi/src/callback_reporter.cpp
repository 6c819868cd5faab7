#include "callback_reporter.h"

#include <algorithm>

namespace df11::tools {
namespace {

// At most about this many reports per phase: a callback into Python costs microseconds.
constexpr uint64_t kReportsPerPhase = 200;

// "planning   " (the terminal's column alignment) -> "planning".
std::string trimmed(const std::string& label) {
  const size_t end = label.find_last_not_of(' ');
  return end == std::string::npos ? std::string() : label.substr(0, end + 1);
}

}  // namespace

void CallbackReporter::keep(const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex_);
  lines_.push_back(line);
}

std::vector<std::string> CallbackReporter::take_lines() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::move(lines_);
}

void CallbackReporter::report(uint64_t done) {
  if (progress_ == nullptr) return;
  if (progress_(user_, phase_.c_str(), std::min(done, total_), total_) != 0) {
    cancel_.cancel("the progress callback");
  }
}

void CallbackReporter::progress_start(const std::string& label, uint64_t total) {
  std::lock_guard<std::mutex> lock(mutex_);
  phase_ = trimmed(label);
  total_ = total;
  step_ = std::max<uint64_t>(1, total / kReportsPerPhase);
  done_.store(0);
  next_report_.store(step_);
  report(0);
}

void CallbackReporter::progress_advance(uint64_t n) {
  const uint64_t done = done_.fetch_add(n) + n;
  uint64_t next = next_report_.load();
  // One thread wins each step; the others only add (a worker's advance stays an atomic add).
  if (done < next || !next_report_.compare_exchange_strong(next, done + step_)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  report(done);
}

void CallbackReporter::progress_finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (phase_.empty()) return;
  report(done_.load());
  phase_.clear();
}

}  // namespace df11::tools
