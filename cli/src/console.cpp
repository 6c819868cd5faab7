#include "console.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "cli_text.h"
#include "df11/byte_units.h"
#include "terminal_text.h"

namespace df11::app {

Console::Console(std::ostream& out, std::ostream& err, int verbosity, bool progress_bar,
                 int columns)
    : out_(out),
      err_(err),
      verbosity_(verbosity),
      bar_enabled_(progress_bar && verbosity >= 1),
      columns_(columns) {}

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
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  // The width is read at every redraw: a resized window gets a line that fits.
  err_ << "\r\033[K"
       << progress_line(label_, done_.load(std::memory_order_relaxed), total_, seconds,
                        columns_ > 0 ? columns_ : terminal_columns(STDERR_FILENO));
  err_.flush();
  bar_visible_ = true;
}

}  // namespace df11::app
