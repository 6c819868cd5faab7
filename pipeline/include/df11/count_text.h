// Counts in messages: "1 file", "2 files", "0 files" (the libraries' notes and the front
// end's summaries say them the same way).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace df11::app {

// `n` and `word`, plural unless n is 1; irregular plurals pass `plural_word`.
std::string count_of(uint64_t n, std::string_view word, std::string_view plural_word = {});

}  // namespace df11::app
