#include "terminal_text.h"

#include <cstdint>

#include "df11/utf8.h"

namespace df11::app {
namespace {

bool needs_escape(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
         (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

void append_escaped(std::string& out, uint8_t b) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[b >> 4];
  out += kHex[b & 0xf];
}

}  // namespace

std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  uint32_t cp = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_decode(text, i, &cp);
    if (n == 0) {  // not UTF-8: this byte alone; resynchronise at the next one
      append_escaped(out, static_cast<uint8_t>(text[i]));
      ++i;
      continue;
    }
    if (needs_escape(cp)) {
      for (size_t k = 0; k < n; ++k) append_escaped(out, static_cast<uint8_t>(text[i + k]));
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace df11::app
