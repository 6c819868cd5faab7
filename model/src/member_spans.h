// A group's members as one logical stream of BF16 patterns: uint16 spans straight over the
// input mappings, in concatenation order, with helpers to walk any element range.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

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

  std::span<const std::span<const uint16_t>> spans() const { return spans_; }
  size_t size() const { return spans_.size(); }
  uint64_t n_elements() const { return starts_.back(); }
  uint64_t start(size_t member) const { return starts_[member]; }

  // fn(member, first element within the member, span of elements) for each piece of
  // [begin, end) in stream order.
  template <typename Fn>
  void for_each_piece(uint64_t begin, uint64_t end, Fn&& fn) const {
    size_t m = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), begin) -
                                   starts_.begin() - 1);
    for (; m < spans_.size() && starts_[m] < end; ++m) {
      const uint64_t lo = std::max(begin, starts_[m]) - starts_[m];
      const uint64_t hi = std::min(end, starts_[m + 1]) - starts_[m];
      if (hi > lo) fn(m, lo, spans_[m].subspan(lo, hi - lo));
    }
  }

 private:
  std::vector<std::span<const uint16_t>> spans_;
  std::vector<uint64_t> starts_{0};  // element offset of each member; back() = total
  std::vector<std::vector<uint16_t>> copies_;
};

}  // namespace df11::app
