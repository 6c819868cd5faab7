#include "df11/count_text.h"

namespace df11::app {

std::string count_of(uint64_t n, std::string_view word, std::string_view plural_word) {
  std::string text = std::to_string(n) + " ";
  if (n == 1) return text.append(word);
  if (!plural_word.empty()) return text.append(plural_word);
  return text.append(word).append("s");
}

}  // namespace df11::app
