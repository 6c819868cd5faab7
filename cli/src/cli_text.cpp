#include "cli_text.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "df11/byte_units.h"

namespace df11::app {

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1u : 0u)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

bool natural_less(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      // Skip leading zeros, then the longer run is the larger number.
      size_t i0 = i, j0 = j;
      while (i0 < a.size() && a[i0] == '0') ++i0;
      while (j0 < b.size() && b[j0] == '0') ++j0;
      size_t i1 = i0, j1 = j0;
      while (i1 < a.size() && digit(a[i1])) ++i1;
      while (j1 < b.size() && digit(b[j1])) ++j1;
      if (i1 - i0 != j1 - j0) return i1 - i0 < j1 - j0;
      const int c = a.substr(i0, i1 - i0).compare(b.substr(j0, j1 - j0));
      if (c != 0) return c < 0;
      if (i1 - i != j1 - j) return i1 - i < j1 - j;  // "01" after "1"
      i = i1;
      j = j1;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  const size_t limit = std::clamp<size_t>(word.size() / 3, 1, 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  if (!best.empty()) return best;
  // An abbreviation ("--out" for "--output"), when it names one candidate only.
  std::string prefixed;
  const size_t dashes = word.find_first_not_of('-');
  if (dashes == std::string_view::npos || word.size() - dashes < 2) return best;
  for (const std::string& c : candidates) {
    if (c.size() > word.size() && c.compare(0, word.size(), word) == 0) {
      if (!prefixed.empty()) return best;  // ambiguous
      prefixed = c;
    }
  }
  return prefixed;
}

namespace {

// A field padded on the left to `width` (never cut): every draw of the bar is as wide as the
// last, so that the line does not shift while it runs.
std::string padded(const std::string& text, size_t width) {
  return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

// "0:42", "12:07", "3:04:59".
std::string clock_text(double seconds) {
  const auto s = static_cast<uint64_t>(seconds + 0.5);
  char text[32];
  if (s >= 3600) {
    std::snprintf(
        text, sizeof text, "%llu:%02llu:%02llu", static_cast<unsigned long long>(s / 3600),
        static_cast<unsigned long long>(s / 60 % 60), static_cast<unsigned long long>(s % 60));
  } else {
    std::snprintf(text, sizeof text, "%llu:%02llu", static_cast<unsigned long long>(s / 60),
                  static_cast<unsigned long long>(s % 60));
  }
  return text;
}

// An ETA is shown once a second has passed and 1% is done: before that the rate says little
// (the first draw once read "ETA 54143s").
constexpr double kEtaAfterSeconds = 1.0;
constexpr double kEtaAfterFraction = 0.01;

}  // namespace

std::string progress_line(std::string_view label, uint64_t done, uint64_t total, double seconds,
                          int columns) {
  done = std::min(done, total);
  const double fraction = total == 0 ? 1.0 : static_cast<double>(done) / total;
  const double rate = seconds > 0 ? done / seconds : 0;
  char percent[8];
  std::snprintf(percent, sizeof percent, "%3d%%", static_cast<int>(fraction * 100));
  // Optional parts, most important first: dropped from the end while the line is too wide.
  // Each has a fixed width ("999.99 GB" is the widest byte count below a terabyte).
  constexpr size_t kBytesWidth = 9;
  std::vector<std::string> parts = {padded(format_bytes(done), kBytesWidth) + "/" +
                                    format_bytes(total)};
  parts.push_back(padded(rate > 0 ? format_bytes(static_cast<uint64_t>(rate)) : "-", kBytesWidth) +
                  "/s");
  const bool eta_known = rate > 0 && seconds >= kEtaAfterSeconds && fraction >= kEtaAfterFraction;
  const std::string eta = "ETA " + (done >= total ? clock_text(0)
                                    : eta_known   ? clock_text((total - done) / rate)
                                                  : std::string("--:--"));
  parts.push_back(eta + std::string(eta.size() < 11 ? 11 - eta.size() : 0, ' '));
  const size_t width = static_cast<size_t>(std::max(columns, 20) - 1);
  std::string name(label.substr(0, std::min<size_t>(label.size(), width / 3)));
  constexpr size_t kMaxBar = 30, kMinBar = 10;
  for (;;) {
    std::string tail = std::string(" ") + percent;
    for (const std::string& p : parts) tail += "  " + p;
    // name + " [" + bar + "]" + tail
    const size_t fixed = name.size() + 3 + tail.size();
    if (fixed + kMinBar <= width || parts.empty()) {
      const size_t room = width > fixed ? width - fixed : 0;
      const size_t bar_width = std::min(kMaxBar, room);
      std::string line = name;
      if (bar_width > 0) {
        const size_t filled = static_cast<size_t>(fraction * bar_width);
        line += " [" + std::string(filled, '#') + std::string(bar_width - filled, '.') + "]";
      }
      line += tail;
      if (line.size() > width) line.resize(width);
      return line;
    }
    parts.pop_back();
  }
}

int terminal_columns(int fd) {
  struct winsize size {};
  if (::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  if (const char* env = std::getenv("COLUMNS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return 80;
}

}  // namespace df11::app
