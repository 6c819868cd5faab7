#include "source_pages.h"

#include <unistd.h>

#include <utility>

namespace df11::app {

SourcePages::SourcePages(const MemberStream& stream, std::vector<MemberSource> sources)
    : stream_(stream),
      sources_(std::move(sources)),
      page_(static_cast<uint64_t>(sysconf(_SC_PAGESIZE))) {}

void SourcePages::drop(uint64_t begin, uint64_t end, bool whole_pages_only) const {
  stream_.for_each_piece(begin, end, [&](const uint16_t*, uint64_t n, uint64_t at) {
    const size_t m = stream_.member_of(at);
    const MemberSource& source = sources_[m];
    if (source.file == nullptr) return;
    uint64_t first = source.offset + 2 * (at - stream_.member_start(m));
    uint64_t last = first + 2 * n;
    if (whole_pages_only) {
      first = (first + page_ - 1) / page_ * page_;
      last = last / page_ * page_;
      if (last <= first) return;
    }
    source.file->advise_dontneed(first, last - first);
  });
}

void SourcePages::populate(uint64_t begin, uint64_t end) const {
  stream_.for_each_piece(begin, end, [&](const uint16_t*, uint64_t n, uint64_t at) {
    const size_t m = stream_.member_of(at);
    const MemberSource& source = sources_[m];
    if (source.file == nullptr) return;
    source.file->advise_populate(source.offset + 2 * (at - stream_.member_start(m)), 2 * n);
  });
}

}  // namespace df11::app
