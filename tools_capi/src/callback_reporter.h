// A pipeline Reporter for the tools C API (df11_tools.h): progress goes to the caller's
// df11_progress_fn (throttled, serialised), whose non-zero return cancels the call's token;
// warnings and notes are kept for the handle's df11_*_warning queries.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "df11/cancel.h"
#include "df11/df11_tools.h"
#include "df11/reporter.h"

namespace df11::tools {

class CallbackReporter final : public app::Reporter {
 public:
  // `progress` may be null. `cancel` is cancelled when the callback asks to stop.
  CallbackReporter(df11_progress_fn progress, void* user, app::CancelToken& cancel)
      : progress_(progress), user_(user), cancel_(cancel) {}

  void note(const std::string& line) override { keep(line); }
  void warning(const std::string& line) override { keep(line); }
  void progress_start(const std::string& label, uint64_t total) override;
  void progress_advance(uint64_t n) override;
  void progress_finish() override;
  int verbosity() const override { return 1; }

  std::vector<std::string> take_lines();

 private:
  void keep(const std::string& line);
  void report(uint64_t done);  // calls the callback; mutex_ held

  df11_progress_fn progress_;
  void* user_;
  app::CancelToken& cancel_;
  std::mutex mutex_;
  std::string phase_;
  uint64_t total_ = 0;
  uint64_t step_ = 1;  // report every step_ units
  std::atomic<uint64_t> done_{0};
  std::atomic<uint64_t> next_report_{0};
  std::vector<std::string> lines_;
};

}  // namespace df11::tools
