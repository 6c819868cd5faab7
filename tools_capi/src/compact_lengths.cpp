// df11_tools_compact_lengths (df11/df11_tools.h): the reference encoder's code lengths for the
// compact execution layout, for engines that transcode on the GPU through libdf11.
#include <algorithm>
#include <array>
#include <cstdint>
#include <span>

#include "df11/df11_tools.h"
#include "df11/exec_compact_encode.h"

extern "C" df11_status df11_tools_compact_lengths(const uint64_t* counts, uint8_t* lengths) {
  if (counts == nullptr || lengths == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  const df11::Result<std::array<uint8_t, df11::kCompactSymbols>> l = df11::choose_compact_lengths(
      std::span<const uint64_t, df11::kCompactSymbols>(counts, df11::kCompactSymbols));
  if (!l.is_ok()) return DF11_ERROR_INVALID_ARGUMENT;
  std::copy(l->begin(), l->end(), lengths);
  return DF11_OK;
}
