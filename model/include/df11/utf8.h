// UTF-8 as RFC 3629 defines it, for text from untrusted files (names, pattern_dict keys).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace df11::app {

// Length (1..4) of the well-formed UTF-8 sequence starting at text[i] (i < text.size()), with
// its code point in *code_point; 0 if the byte does not start one (overlong forms,
// surrogates, code points above U+10FFFF, stray or missing continuation bytes).
size_t utf8_decode(std::string_view text, size_t i, uint32_t* code_point);

// True if all of `text` is well-formed UTF-8.
bool is_valid_utf8(std::string_view text);

}  // namespace df11::app
