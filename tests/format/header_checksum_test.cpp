// The whole-header checksum (spec 5.2): the worked example, writer and reader agree, and
// every single-bit flip of a stamped header is caught by the parser or by the checksum.
#include "df11/header_checksum.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "df11/hash.h"
#include "df11/safetensors.h"
#include "format_test_util.h"

namespace df11 {
namespace {

using test::as_bytes;
using test::make_safetensors;

// spec 5.2's worked example: this header (128 bytes with its padding) has checksum
// 2f35fce70b04ea6e (computed independently with the system libxxhash from Python).
const std::string kExampleHeader =
    R"({"__metadata__":{"format":"pt","df11_header_xxh3":"0000000000000000"},)"
    R"("w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}      )";
constexpr const char* kExampleChecksum = "2f35fce70b04ea6e";

std::string with_value(std::string header, const std::string& value) {
  const size_t at = header.find("0000000000000000");
  return header.replace(at, 16, value);
}

Result<bool> check_text(const std::string& header_text, uint64_t data_bytes = 1) {
  const std::vector<uint8_t> file = make_safetensors(header_text, data_bytes);
  auto header = parse_safetensors(file, "x.safetensors");
  if (!header) return header.status();
  return check_header_checksum(*header);
}

TEST(HeaderChecksum, WorkedExample) {
  ASSERT_EQ(kExampleHeader.size(), 128u);
  auto at = find_header_checksum(kExampleHeader, "x");
  ASSERT_TRUE(at.is_ok());
  EXPECT_EQ(*at, kExampleHeader.find("0000000000000000"));
  EXPECT_EQ(header_checksum_hex(kExampleHeader, *at), kExampleChecksum);
  // With the placeholder in place the checksum is plain XXH3 of the text.
  EXPECT_EQ(xxh3_hex(as_bytes(kExampleHeader)), kExampleChecksum);
  // The value itself does not enter the checksum.
  const std::string stamped = with_value(kExampleHeader, kExampleChecksum);
  EXPECT_EQ(header_checksum_hex(stamped, *at), kExampleChecksum);

  auto ok = check_text(stamped);
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_TRUE(*ok);
}

TEST(HeaderChecksum, AbsentIsNotAnError) {
  auto r = check_text(R"({"__metadata__":{"format":"pt"},"w":{"dtype":"U8","shape":[1],)"
                      R"("data_offsets":[0,1]}})");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_FALSE(*r);
  auto none = find_header_checksum("{}", "x");
  ASSERT_TRUE(none.is_ok());
  EXPECT_EQ(*none, std::string_view::npos);
}

TEST(HeaderChecksum, MismatchIsCorruptData) {
  const Result<bool> r = check_text(with_value(kExampleHeader, "2f35fce70b04ea6f"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(r.status().message().find("x.safetensors: header checksum mismatch"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find(kExampleChecksum), std::string::npos);
}

TEST(HeaderChecksum, MalformedValuesAreBadMetadata) {
  // Not lowercase hex.
  EXPECT_EQ(check_text(with_value(kExampleHeader, "2F35FCE70B04EA6E")).status().code(),
            ErrorCode::kBadMetadata);
  // Escaped: the parsed value is hex, but the text bytes are not what the checksum skips.
  std::string escaped = kExampleHeader;
  escaped.replace(escaped.find("0000000000000000"), 16, "\\u00300000000000000");
  escaped.erase(escaped.size() - 5);  // 5 padding spaces fewer (readers accept any length)
  EXPECT_EQ(check_text(escaped).status().code(), ErrorCode::kBadMetadata);
  // Not written compactly.
  std::string spaced = kExampleHeader;
  spaced.replace(spaced.find("\":\"0000"), 3, "\": \"");
  spaced.pop_back();
  EXPECT_EQ(check_text(spaced).status().code(), ErrorCode::kBadMetadata);
  // Raw text with the field twice (not valid JSON, but find must not pick one silently).
  const std::string twice =
      R"({"df11_header_xxh3":"0000000000000000","df11_header_xxh3":"0000000000000000"})";
  EXPECT_EQ(find_header_checksum(twice, "x").status().code(), ErrorCode::kBadMetadata);
  EXPECT_EQ(find_header_checksum(R"({"df11_header_xxh3":"00"})", "x").status().code(),
            ErrorCode::kBadMetadata);
}

FinalizedLayout stamped_layout() {
  SafetensorsLayout layout;
  EXPECT_TRUE(layout.add_tensor("model.layers.0.gaps", Dtype::kU8, {3}, 3).is_ok());
  EXPECT_TRUE(layout.add_tensor("model.norm.weight", Dtype::kBF16, {2}, 4).is_ok());
  EXPECT_TRUE(layout
                  .set_metadata(
                      {{"format", "pt"},
                       {"df11", R"({"spec_version":"1.1","encoder":"t"})"},
                       {std::string(kHeaderChecksumKey), std::string(kHeaderChecksumPlaceholder)}})
                  .is_ok());
  auto finalized = layout.finalize();
  EXPECT_TRUE(finalized.is_ok());
  EXPECT_TRUE(stamp_header_checksum(*finalized).is_ok());
  return std::move(finalized).value();
}

std::vector<uint8_t> file_of(const FinalizedLayout& layout) {
  std::vector<uint8_t> file = layout.prefix;
  file.resize(layout.file_size, 0x5a);
  return file;
}

TEST(HeaderChecksum, WriterAndReaderAgree) {
  const FinalizedLayout layout = stamped_layout();
  const std::string text(layout.header_text());
  EXPECT_EQ(text.find(kHeaderChecksumPlaceholder), std::string::npos) << text;
  auto header = parse_safetensors(file_of(layout), "m.safetensors");
  ASSERT_TRUE(header.is_ok()) << header.status().to_string();
  auto r = check_header_checksum(*header);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(*r);
  // Independently: XXH3 of the text with the value zeroed.
  std::string zeroed = text;
  const size_t at = zeroed.find(*header->metadata_value(kHeaderChecksumKey));
  zeroed.replace(at, 16, kHeaderChecksumPlaceholder);
  EXPECT_EQ(*header->metadata_value(kHeaderChecksumKey), xxh3_hex(as_bytes(zeroed)));
}

TEST(HeaderChecksum, StampNeedsThePlaceholder) {
  SafetensorsLayout layout;
  ASSERT_TRUE(layout.add_tensor("w", Dtype::kU8, {1}, 1).is_ok());
  ASSERT_TRUE(layout.set_metadata({{"format", "pt"}}).is_ok());
  auto finalized = layout.finalize();
  ASSERT_TRUE(finalized.is_ok());
  EXPECT_EQ(stamp_header_checksum(*finalized).code(), ErrorCode::kInvalidArgument);
}

// Every single-bit flip anywhere before the data (length prefix, JSON, padding, the value
// itself) makes the file fail to parse, fail the checksum, or lose the checksum entry (its
// key renamed: a 1.1 reader requires the entry, spec 5.1). None goes unnoticed.
TEST(HeaderChecksum, EverySingleBitFlipBeforeTheDataIsCaught) {
  const std::vector<uint8_t> good = file_of(stamped_layout());
  const size_t data_start = stamped_layout().data_start;
  int caught_by_checksum = 0;
  for (size_t byte = 0; byte < data_start; ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> file = good;
      file[byte] ^= static_cast<uint8_t>(1u << bit);
      auto header = parse_safetensors(file, "m.safetensors");
      if (!header) continue;  // caught by the container rules
      const Result<bool> r = check_header_checksum(*header);
      EXPECT_FALSE(r.is_ok() && *r) << "byte " << byte << " bit " << bit << " not caught";
      if (r.is_ok()) {
        EXPECT_EQ(header->metadata_value(kHeaderChecksumKey), nullptr);
      }
      if (!r.is_ok()) ++caught_by_checksum;
    }
  }
  EXPECT_GT(caught_by_checksum, 100);
}

}  // namespace
}  // namespace df11
