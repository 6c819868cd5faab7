// Dropping the input pages of a group's weights once they are read. compress reads the
// original shards through mappings, and mapped file pages count in its resident memory; the
// memory bound (1.5 x the largest group + 256 MB) holds only if they go as the work moves on.
#pragma once

#include <cstdint>
#include <vector>

#include "df11/file_io.h"
#include "df11/member_stream.h"

namespace df11::app {

// Where a member's bytes lie in its input mapping.
struct MemberSource {
  const MappedFile* file = nullptr;  // null: the member is a copy, not a view of a mapping
  uint64_t offset = 0;               // absolute file offset of the tensor's first byte
};

class SourcePages {
 public:
  // `stream` (the group's members) must outlive this; sources[m] is member m's.
  SourcePages(const MemberStream& stream, std::vector<MemberSource> sources);

  // Drops the pages of weights [begin, end). Only the pages wholly inside the range when
  // `whole_pages_only` (another worker may still read the pages it shares with its
  // neighbours), else every page it touches. Thread-safe.
  void drop(uint64_t begin, uint64_t end, bool whole_pages_only) const;
  // Maps the pages of weights [begin, end) in one call per member piece, for a worker about
  // to read them all (MappedFile::advise_populate). Thread-safe.
  void populate(uint64_t begin, uint64_t end) const;

 private:
  const MemberStream& stream_;
  std::vector<MemberSource> sources_;
  uint64_t page_;
};

}  // namespace df11::app
