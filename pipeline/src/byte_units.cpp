#include "df11/byte_units.h"

#include <cstdio>

namespace df11::app {

std::string format_bytes(uint64_t bytes) {
  char text[32];
  const double b = static_cast<double>(bytes);
  if (b >= 1e9) {
    std::snprintf(text, sizeof text, "%.2f GB", b / 1e9);
  } else if (b >= 1e6) {
    std::snprintf(text, sizeof text, "%.1f MB", b / 1e6);
  } else if (b >= 1e3) {
    std::snprintf(text, sizeof text, "%.1f kB", b / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  }
  return text;
}

}  // namespace df11::app
