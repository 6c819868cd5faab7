// Seconds spent per named phase of a pipeline, summed over threads, for the -v line that
// says where the time went ("phases: planning 0.41 s, encoding 1.02 s, ..."). Phases keep
// the order in which they were first added. Thread-safe.
#pragma once

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace df11::app {

class PhaseTimes {
 public:
  void add(const std::string& phase, double seconds) {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [name, total] : phases_) {
      if (name == phase) {
        total += seconds;
        return;
      }
    }
    phases_.emplace_back(phase, seconds);
  }

  // "planning 0.41 s, encoding 1.02 s"
  std::string text() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::string line;
    for (const auto& [name, total] : phases_) {
      char buffer[32];
      std::snprintf(buffer, sizeof buffer, " %.2f s", total);
      line += (line.empty() ? "" : ", ") + name + buffer;
    }
    return line;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, double>> phases_;
};

// Adds the seconds from construction to destruction to `phase` (no-op for a null `times`).
class PhaseTimer {
 public:
  PhaseTimer(PhaseTimes* times, std::string phase) : times_(times), phase_(std::move(phase)) {}
  ~PhaseTimer() {
    if (times_ != nullptr) {
      times_->add(phase_, std::chrono::duration<double>(Clock::now() - start_).count());
    }
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  using Clock = std::chrono::steady_clock;
  PhaseTimes* times_;
  std::string phase_;
  Clock::time_point start_ = Clock::now();
};

}  // namespace df11::app
