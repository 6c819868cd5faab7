// A group's members as uint16 spans straight over the input mappings, in concatenation
// order (copies only for members that are not 2-byte aligned), walked through the encoder's
// MemberStream.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "df11/member_stream.h"
#include "df11/status.h"

namespace df11::app {

// The little-endian bytes of BF16 patterns (what files hold).
inline std::span<const uint8_t> bf16_bytes(std::span<const uint16_t> weights) {
  return {reinterpret_cast<const uint8_t*>(weights.data()), weights.size_bytes()};
}

class MemberSpans {
 public:
  // `member_bytes`: each member's bytes (little-endian BF16, even length). A member whose
  // bytes are not 2-byte aligned in memory (an odd header length in its file) is copied,
  // since the codec reads uint16_t.
  static Result<MemberSpans> make(const std::vector<std::span<const uint8_t>>& member_bytes);

  MemberSpans(MemberSpans&&) noexcept = default;
  MemberSpans& operator=(MemberSpans&&) noexcept = default;
  // Not copyable: stream_ refers to spans_'s heap buffer, which a move keeps in place.
  MemberSpans(const MemberSpans&) = delete;
  MemberSpans& operator=(const MemberSpans&) = delete;

  std::span<const std::span<const uint16_t>> spans() const { return spans_; }
  size_t size() const { return spans_.size(); }
  // The members as one stream of weights (element ranges, member of an index, pieces).
  const MemberStream& stream() const { return stream_; }

 private:
  MemberSpans() = default;

  std::vector<std::span<const uint16_t>> spans_;
  std::vector<std::vector<uint16_t>> copies_;
  MemberStream stream_{{}};
};

}  // namespace df11::app
