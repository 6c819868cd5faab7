#include "df11/member_spans.h"

#include <bit>
#include <cstring>
#include <new>
#include <string>

namespace df11::app {

static_assert(std::endian::native == std::endian::little,
              "BF16 tensors are read in place as little-endian uint16");

Result<MemberSpans> MemberSpans::make(const std::vector<std::span<const uint8_t>>& member_bytes) {
  MemberSpans result;
  for (size_t m = 0; m < member_bytes.size(); ++m) {
    const auto bytes = member_bytes[m];
    if (bytes.size() % 2 != 0) {
      return Status(ErrorCode::kInternal, "member " + std::to_string(m) + " has an odd size");
    }
    const size_t n = bytes.size() / 2;
    if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(uint16_t) == 0) {
      result.spans_.emplace_back(reinterpret_cast<const uint16_t*>(bytes.data()), n);
    } else {
      try {
        result.copies_.emplace_back(n);
      } catch (const std::bad_alloc&) {
        return Status(ErrorCode::kResourceLimit, "cannot allocate " + std::to_string(bytes.size()) +
                                                     " bytes to align a tensor");
      }
      std::memcpy(result.copies_.back().data(), bytes.data(), bytes.size());
      result.spans_.emplace_back(result.copies_.back().data(), n);
    }
  }
  result.stream_ = MemberStream(result.spans_);
  return result;
}

}  // namespace df11::app
