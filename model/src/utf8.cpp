#include "df11/utf8.h"

namespace df11::app {

size_t utf8_decode(std::string_view text, size_t i, uint32_t* code_point) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) {
    *code_point = b0;
    return 1;
  }
  // Table 3-7 of the Unicode standard: the lead byte fixes the length and the range of the
  // second byte.
  size_t length = 0;
  uint8_t low = 0x80, high = 0xbf;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    length = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    length = 3;
    if (b0 == 0xe0) low = 0xa0;   // overlong
    if (b0 == 0xed) high = 0x9f;  // surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    length = 4;
    if (b0 == 0xf0) low = 0x90;   // overlong
    if (b0 == 0xf4) high = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (text.size() - i < length) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  uint32_t cp = b0 & (0xff >> (length + 1));
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3f);
  }
  *code_point = cp;
  return length;
}

bool is_valid_utf8(std::string_view text) {
  uint32_t cp = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_decode(text, i, &cp);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace df11::app
