#include "console.h"

#include <algorithm>
#include <cstdio>

#include "byte_units.h"
#include "terminal_text.h"

namespace df11::app {

Console::Console(std::ostream& out, std::ostream& err, int verbosity, bool progress_bar)
    : out_(out), err_(err), verbosity_(verbosity), bar_enabled_(progress_bar && verbosity >= 1) {}

Console::~Console() { progress_finish(); }

void Console::print(std::ostream& stream, const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bar_visible_) {
    err_ << "\r\033[K";  // erase the bar; the ticker redraws it below the line
    bar_visible_ = false;
  }
  // Lines carry names and excerpts from untrusted files: one line each, no control bytes.
  stream << terminal_safe(line) << '\n';
  stream.flush();
}

void Console::result(const std::string& line) {
  if (verbosity_ >= 1) print(out_, line);
}
void Console::detail(const std::string& line) {
  if (verbosity_ >= 2) print(out_, line);
}
void Console::note(const std::string& line) {
  if (verbosity_ >= 1) print(err_, "note: " + line);
}
void Console::report(const std::string& line) { print(out_, line); }
void Console::warn(const std::string& line) { print(err_, "warning: " + line); }
void Console::error(const std::string& line) { print(err_, "error: " + line); }

void Console::progress_start(const std::string& label, uint64_t total) {
  progress_finish();
  std::lock_guard<std::mutex> lock(mutex_);
  label_ = label;
  total_ = total;
  done_.store(0, std::memory_order_relaxed);
  started_ = std::chrono::steady_clock::now();
  if (!bar_enabled_) return;
  running_ = true;
  ticker_ = std::thread([this] { ticker(); });
}

void Console::progress_finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!running_) return;
    running_ = false;
  }
  wake_.notify_all();
  ticker_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  if (bar_visible_) {
    err_ << "\r\033[K";
    err_.flush();
    bar_visible_ = false;
  }
}

void Console::ticker() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (running_) {
    draw_locked();
    wake_.wait_for(lock, std::chrono::milliseconds(125), [this] { return !running_; });
  }
}

void Console::draw_locked() {
  const uint64_t done = std::min(done_.load(std::memory_order_relaxed), total_);
  const double fraction = total_ == 0 ? 1.0 : static_cast<double>(done) / total_;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kWidth - filled), '.');
  char tail[128];
  const double rate = seconds > 0 ? done / seconds : 0;
  if (rate > 0 && done < total_) {
    std::snprintf(tail, sizeof tail, " %3d%%  %s/%s  %s/s  ETA %.0fs",
                  static_cast<int>(fraction * 100), format_bytes(done).c_str(),
                  format_bytes(total_).c_str(), format_bytes(static_cast<uint64_t>(rate)).c_str(),
                  (total_ - done) / rate);
  } else {
    std::snprintf(tail, sizeof tail, " %3d%%  %s/%s", static_cast<int>(fraction * 100),
                  format_bytes(done).c_str(), format_bytes(total_).c_str());
  }
  err_ << "\r\033[K" << label_ << " [" << bar << "]" << tail;
  err_.flush();
  bar_visible_ = true;
}


}  // namespace df11::app
