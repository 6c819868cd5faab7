// The whole-header checksum: spec 5.2.
#include "df11/header_checksum.h"

#include <cstring>

#include "df11/hash.h"
#include "json_util.h"

namespace df11 {
namespace {

constexpr size_t kValueBytes = kHeaderChecksumPlaceholder.size();

// `"df11_header_xxh3":"`: in valid JSON this byte sequence can only be an object member with
// a string value (a '"' inside a string is always escaped), and the only object that may hold
// it is __metadata__ (tensor entries have fixed fields, top-level values are objects).
std::string field_prefix() { return "\"" + std::string(kHeaderChecksumKey) + "\":\""; }

std::span<const uint8_t> bytes_of(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

Result<size_t> find_header_checksum(std::string_view header_text, const std::string& what) {
  const std::string prefix = field_prefix();
  const size_t at = header_text.find(prefix);
  if (at == std::string_view::npos) return std::string_view::npos;
  if (header_text.find(prefix, at + 1) != std::string_view::npos) {
    return Status(ErrorCode::kBadMetadata,
                  what + ": header has the field '" + std::string(kHeaderChecksumKey) + "' twice");
  }
  const size_t value = at + prefix.size();
  if (header_text.size() - value < kValueBytes + 1 || header_text[value + kValueBytes] != '"') {
    return Status(ErrorCode::kBadMetadata, what + ": header field '" +
                                               std::string(kHeaderChecksumKey) +
                                               "' is not a 16-character string");
  }
  return value;
}

std::string header_checksum_hex(std::string_view header_text, size_t value_offset) {
  Xxh3 hash;
  hash.update(bytes_of(header_text.substr(0, value_offset)));
  hash.update(bytes_of(kHeaderChecksumPlaceholder));
  hash.update(bytes_of(header_text.substr(value_offset + kValueBytes)));
  return hash.hex_digest();
}

Status stamp_header_checksum(FinalizedLayout& layout) {
  const std::string_view text = layout.header_text();
  DF11_ASSIGN_OR_RETURN(const size_t value, find_header_checksum(text, "header checksum"));
  if (value == std::string_view::npos ||
      text.substr(value, kValueBytes) != kHeaderChecksumPlaceholder) {
    return Status(ErrorCode::kInvalidArgument, "header checksum: the header has no '" +
                                                   std::string(kHeaderChecksumKey) +
                                                   "' placeholder to fill in");
  }
  const std::string hex = header_checksum_hex(text, value);
  std::memcpy(layout.prefix.data() + kHeaderLengthBytes + value, hex.data(), kValueBytes);
  return Status::ok();
}

Result<bool> check_header_checksum(const SafetensorsHeader& header) {
  const std::string* recorded = header.metadata_value(kHeaderChecksumKey);
  if (recorded == nullptr) return false;
  const std::string& what = header.file_name;
  if (!is_lower_hex(*recorded, kValueBytes)) {
    return Status(ErrorCode::kBadMetadata,
                  what + ": __metadata__ '" + std::string(kHeaderChecksumKey) +
                      "' = " + detail::quote_name(*recorded) + " is not 16 lowercase hex digits");
  }
  DF11_ASSIGN_OR_RETURN(const size_t value, find_header_checksum(header.header_text, what));
  // The parsed value must be the bytes the checksum skips (no escapes, no other spelling):
  // otherwise a header could carry one value for readers and hash another.
  if (value == std::string_view::npos ||
      std::string_view(header.header_text).substr(value, kValueBytes) != *recorded) {
    return Status(ErrorCode::kBadMetadata,
                  what + ": __metadata__ '" + std::string(kHeaderChecksumKey) +
                      "' is not written as \"" + std::string(kHeaderChecksumKey) +
                      "\":\"<16 hex digits>\" (spec 5.2)");
  }
  const std::string actual = header_checksum_hex(header.header_text, value);
  if (actual != *recorded) {
    return Status(ErrorCode::kCorruptData, what +
                                               ": header checksum mismatch: the header text has "
                                               "xxh3 " +
                                               actual + ", its '" +
                                               std::string(kHeaderChecksumKey) + "' records " +
                                               *recorded);
  }
  return true;
}

}  // namespace df11
