// Text from files reaches the terminal in messages: tensor and file names, JSON excerpts,
// pattern_dict keys. A hostile file must not be able to move the cursor, recolor, retitle or
// clear the terminal, hide or reorder text (bidirectional controls), or put bytes that are
// not UTF-8 on stdout/stderr. Console escapes every line it prints with terminal_safe().
#pragma once

#include <string>
#include <string_view>

namespace df11::app {

// `text` with the bytes of every C0 control (newline and tab included), DEL, C1 control,
// bidirectional formatting character (U+061C, U+200E/F, U+202A..U+202E, U+2066..U+2069),
// line/paragraph separator (U+2028/9) and of every byte that is not part of a well-formed
// UTF-8 sequence written as "\xNN" (lowercase hex). Everything else, non-ASCII letters
// included, is kept as is. Backslashes are not doubled: the result is for reading, not for
// parsing back.
std::string terminal_safe(std::string_view text);

}  // namespace df11::app
