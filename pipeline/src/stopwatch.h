// Wall-clock seconds since construction (or the last restart), for summaries and -v timings.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace df11::app {

class Stopwatch {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  // "1.23 s"
  std::string text() const {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.2f s", seconds());
    return buffer;
  }
  void restart() { start_ = std::chrono::steady_clock::now(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace df11::app
