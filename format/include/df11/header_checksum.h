// The whole-header checksum of a DF11 shard (spec 5.2): __metadata__ key "df11_header_xxh3"
// holds XXH3-64 of the exact header text (the N bytes after the 8-byte length, padding
// included) computed with that value's 16 hex digits replaced by 16 '0' characters. It covers
// every header byte the per-tensor checksums do not: the df11 key names, the encoder string,
// the original __metadata__ entries, the tensor table, the padding.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "df11/safetensors.h"
#include "df11/status.h"

namespace df11 {

// spec 5.2: the __metadata__ key of the header checksum.
inline constexpr std::string_view kHeaderChecksumKey = "df11_header_xxh3";
// The value a writer lays out before the checksum is known (same width as the final one).
inline constexpr std::string_view kHeaderChecksumPlaceholder = "0000000000000000";

// Offset, in `header_text`, of the 16 value bytes of the field, which spec 5.2 requires to be
// written compactly as "df11_header_xxh3":"<16 bytes>". npos if the text has no such field.
// kBadMetadata if it occurs more than once (a valid header has it at most once: the sequence
// can only be a member of __metadata__) or is not followed by 16 bytes and '"'.
// `what` prefixes messages (e.g. the file name).
Result<size_t> find_header_checksum(std::string_view header_text, const std::string& what);

// XXH3-64 hex of `header_text` with bytes [value_offset, value_offset + 16) read as '0'.
// The caller passes an offset from find_header_checksum().
std::string header_checksum_hex(std::string_view header_text, size_t value_offset);

// Writer: computes the checksum of the laid-out header and writes it over the placeholder in
// `layout.prefix`. kInvalidArgument if the header has no placeholder field (set the
// __metadata__ entry kHeaderChecksumKey -> kHeaderChecksumPlaceholder before finalize()).
Status stamp_header_checksum(FinalizedLayout& layout);

// Reader: false if the header has no kHeaderChecksumKey entry; true if it has one and it
// matches. kCorruptData "header checksum mismatch" (naming the file and both values) if it
// does not match; kBadMetadata if the entry is not 16 lowercase hex digits or not found in
// the text as find_header_checksum() requires.
Result<bool> check_header_checksum(const SafetensorsHeader& header);

}  // namespace df11
