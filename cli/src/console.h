// Where a subcommand's human-readable output goes: results on `out`, warnings and the
// progress bar on `err`. Thread-safe: worker threads may warn while the bar is drawn.
// Every line is printed through terminal_safe() (terminal_text.h): control characters,
// newlines included, and bytes that are not UTF-8 come out as \xNN.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

#include "df11/reporter.h"

namespace df11::app {

// verbosity: 0 = quiet (-q: errors and warnings only), 1 = normal, 2+ = verbose (-v).
class Console final : public Reporter {
 public:
  // `columns`: the progress bar's width; 0 reads the terminal's width at every redraw.
  Console(std::ostream& out, std::ostream& err, int verbosity, bool progress_bar, int columns = 0);
  ~Console();
  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;

  int verbosity() const override { return verbosity_; }

  void result(const std::string& line);  // stdout, verbosity >= 1
  void report(const std::string& line);  // stdout, always (verification findings)
  void warn(const std::string& line);    // stderr "warning: ...", always
  void error(const std::string& line);   // stderr "error: ...", always

  // Progress over `total` units (bytes); the bar is drawn ~8 times a second on stderr, only
  // when enabled at construction (a terminal and not quiet). advance() is lock-free.
  void progress_start(const std::string& label, uint64_t total) override;
  void progress_advance(uint64_t n) override { done_.fetch_add(n, std::memory_order_relaxed); }
  void progress_finish() override;

  // Reporter: what the pipelines say.
  void note(const std::string& line) override;    // stderr "note: ...", verbosity >= 1
  void detail(const std::string& line) override;  // stdout, verbosity >= 2
  void finding(const std::string& line) override { report(line); }
  void warning(const std::string& line) override { warn(line); }

 private:
  void print(std::ostream& stream, const std::string& line);
  void draw_locked();
  void ticker();

  std::ostream& out_;
  std::ostream& err_;
  const int verbosity_;
  const bool bar_enabled_;
  const int columns_;

  std::mutex mutex_;  // guards the streams, the label and the ticker state
  std::condition_variable wake_;
  std::thread ticker_;
  bool running_ = false;
  bool bar_visible_ = false;
  std::string label_;
  uint64_t total_ = 0;
  std::atomic<uint64_t> done_{0};
  std::chrono::steady_clock::time_point started_;
};

}  // namespace df11::app
