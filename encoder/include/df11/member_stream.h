// A group's members seen as one stream of BF16 patterns (spec 2.5: members are
// concatenated in order), without copying them. The one walker over a group's members: the
// encoder uses it, and so do model/ and pipeline/ (MemberSpans holds one over its aligned
// spans).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace df11 {

class MemberStream {
 public:
  // The caller has checked that the sizes sum without overflow. Members must outlive this.
  explicit MemberStream(std::span<const std::span<const uint16_t>> members)
      : members_(members), starts_(members.size() + 1, 0) {
    for (size_t i = 0; i < members.size(); ++i) starts_[i + 1] = starts_[i] + members[i].size();
  }

  uint64_t size() const { return starts_.back(); }
  size_t member_count() const { return members_.size(); }
  uint64_t member_start(size_t m) const { return starts_[m]; }

  // Member holding stream index i (i < size()); members may be empty.
  size_t member_of(uint64_t i) const {
    return static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), i) -
                               starts_.begin()) -
           1;
  }

  uint16_t at(uint64_t i) const {
    const size_t m = member_of(i);
    return members_[m][i - starts_[m]];
  }

  // Calls f(const uint16_t* data, uint64_t count, uint64_t stream_index) for each maximal
  // piece of [begin, end) that lies in one member, in stream order.
  template <typename F>
  void for_each_piece(uint64_t begin, uint64_t end, F&& f) const {
    if (begin >= end) return;
    for (size_t m = member_of(begin); m < members_.size() && starts_[m] < end; ++m) {
      const uint64_t lo = std::max(begin, starts_[m]);
      const uint64_t hi = std::min(end, starts_[m + 1]);
      if (lo < hi) f(members_[m].data() + (lo - starts_[m]), hi - lo, lo);
    }
  }

 private:
  std::span<const std::span<const uint16_t>> members_;
  std::vector<uint64_t> starts_;  // starts_[m] = stream index of member m's first weight
};

}  // namespace df11
