#include "mkmodel/byte_size.h"

#include <cctype>
#include <charconv>
#include <cstdio>

namespace df11::mkmodel {

Result<uint64_t> parse_byte_size(std::string_view text) {
  const auto bad = [&] {
    return Status(ErrorCode::kInvalidArgument,
                  "invalid size '" + std::string(text) + "' (examples: 200MB, 1.5GB, 512MiB)");
  };
  size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    ++digits;
  }
  if (digits == 0) return bad();
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + digits, value);
  if (ec != std::errc() || end != text.data() + digits) return bad();

  std::string unit;
  for (const char c : text.substr(digits)) {
    if (c != ' ') unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  double scale = 0;
  if (unit.empty() || unit == "b")
    scale = 1;
  else if (unit == "kb" || unit == "k")
    scale = 1e3;
  else if (unit == "mb" || unit == "m")
    scale = 1e6;
  else if (unit == "gb" || unit == "g")
    scale = 1e9;
  else if (unit == "tb" || unit == "t")
    scale = 1e12;
  else if (unit == "kib")
    scale = 1024.0;
  else if (unit == "mib")
    scale = 1024.0 * 1024;
  else if (unit == "gib")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "tib")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    return bad();
  const double bytes = value * scale;
  if (!(bytes >= 1) || bytes >= 0x1p60) return bad();
  return static_cast<uint64_t>(bytes + 0.5);
}

std::string format_byte_size(uint64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (b >= 1e9)
    std::snprintf(buf, sizeof(buf), "%.2f GB", b / 1e9);
  else if (b >= 1e6)
    std::snprintf(buf, sizeof(buf), "%.1f MB", b / 1e6);
  else if (b >= 1e3)
    std::snprintf(buf, sizeof(buf), "%.1f kB", b / 1e3);
  else
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  return buf;
}

}  // namespace df11::mkmodel
