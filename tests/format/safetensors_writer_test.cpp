// SafetensorsLayout / serialize_safetensors / write_safetensors: spec 2.4.
#include <gtest/gtest.h>

#include <cstdio>
#include <numeric>

#include "df11/safetensors.h"
#include "format_test_util.h"

namespace df11 {
namespace {

std::vector<uint8_t> iota_bytes(size_t n, uint8_t start) {
  std::vector<uint8_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

TEST(SafetensorsWriter, RoundTripKeepsTensorsMetadataAndBytes) {
  const std::vector<uint8_t> a = iota_bytes(12, 1), b = iota_bytes(2, 100), c;
  const std::vector<TensorData> tensors = {
      {"layer.weight", Dtype::kBF16, {2, 3}, a},
      {"scalar", Dtype::kI16, {}, b},
      {"empty", Dtype::kF32, {0, 7}, c},
  };
  const MetadataEntries meta = {{"format", "pt"}, {"df11", "{\"x\":\"\\u0000\\n\"}"}, {"é", "ü"}};
  Result<std::vector<uint8_t>> file = serialize_safetensors(tensors, &meta);
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();

  Result<SafetensorsHeader> h = parse_safetensors(*file, "rt.safetensors");
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  ASSERT_EQ(h->tensors.size(), 3u);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = h->tensors[i];  // insertion order == offset order
    EXPECT_EQ(t.name, tensors[i].name);
    EXPECT_EQ(t.dtype, tensors[i].dtype);
    EXPECT_EQ(t.shape, tensors[i].shape);
    const std::vector<uint8_t> stored(file->begin() + t.file_offset,
                                      file->begin() + t.file_offset + t.byte_size());
    EXPECT_EQ(stored, std::vector<uint8_t>(tensors[i].bytes.begin(), tensors[i].bytes.end()));
  }
  EXPECT_TRUE(h->has_metadata);
  EXPECT_EQ(h->metadata, meta);
  // spec 2.4: header padded with spaces to a multiple of 8.
  EXPECT_EQ(h->header_text.size() % kHeaderAlignment, 0u);
  EXPECT_EQ(h->data_start % kHeaderAlignment, 0u);
  // Compact JSON, keys in insertion order, __metadata__ first.
  EXPECT_EQ(h->header_text.rfind(
                R"({"__metadata__":{"format":"pt","df11":"{\"x\":\"\\u0000\\n\"}","é":"ü"},)"
                R"("layer.weight":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},)",
                0),
            0u)
      << h->header_text;
}

TEST(SafetensorsWriter, LayoutOffsetsAndPadding) {
  SafetensorsLayout layout;
  ASSERT_TRUE(layout.add_tensor("x", Dtype::kU8, {5}, 5).is_ok());
  ASSERT_TRUE(layout.add_tensor("y", Dtype::kF64, {2}, 16).is_ok());
  Result<FinalizedLayout> f = layout.finalize();
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  const std::string json = R"({"x":{"dtype":"U8","shape":[5],"data_offsets":[0,5]},)"
                           R"("y":{"dtype":"F64","shape":[2],"data_offsets":[5,21]}})";
  std::string padded = json;
  padded.append((8 - json.size() % 8) % 8, ' ');
  EXPECT_EQ(f->header_text(), padded);
  EXPECT_EQ(f->data_start, 8 + padded.size());
  EXPECT_EQ(f->prefix.size(), f->data_start);
  EXPECT_EQ(load_le64(f->prefix.data()), padded.size());
  EXPECT_EQ(f->tensor_offsets, (std::vector<uint64_t>{f->data_start, f->data_start + 5}));
  EXPECT_EQ(f->file_size, f->data_start + 21);
  // No __metadata__ unless set; set-but-empty is written.
  EXPECT_EQ(f->header_text().find("__metadata__"), std::string::npos);
  ASSERT_TRUE(layout.set_metadata({}).is_ok());
  f = layout.finalize();
  ASSERT_TRUE(f.is_ok());
  EXPECT_EQ(f->header_text().rfind(R"({"__metadata__":{},"x":)", 0), 0u);
}

TEST(SafetensorsWriter, LayoutRejectsBadTensors) {
  SafetensorsLayout layout;
  ASSERT_TRUE(layout.add_tensor("x", Dtype::kU8, {5}, 5).is_ok());
  EXPECT_STATUS(layout.add_tensor("x", Dtype::kU8, {1}, 1), ErrorCode::kDuplicateName, "'x'");
  EXPECT_STATUS(layout.add_tensor("y", Dtype::kF32, {3}, 4), ErrorCode::kInvalidArgument, "'y'",
                "needs 12");
  EXPECT_STATUS(layout.add_tensor("__metadata__", Dtype::kU8, {1}, 1), ErrorCode::kInvalidArgument,
                "reserved");
  EXPECT_STATUS(layout.add_tensor("z", Dtype::kU8, {uint64_t{1} << 62, 8}, 0), ErrorCode::kOverflow,
                "'z'");
  EXPECT_STATUS(layout.add_tensor("f", Dtype::kF4, {3}, 1), ErrorCode::kBadShape, "'f'");
  EXPECT_STATUS(layout.add_tensor("r", Dtype::kU8, std::vector<uint64_t>(kMaxRank + 1, 1), 1),
                ErrorCode::kResourceLimit, "Max_Rank");
  EXPECT_STATUS(layout.set_metadata({{"k", "1"}, {"k", "2"}}), ErrorCode::kDuplicateName, "'k'");
  EXPECT_EQ(layout.tensor_count(), 1u);

  SafetensorsLayout bad_utf8;
  ASSERT_TRUE(bad_utf8.add_tensor("\xff", Dtype::kU8, {0}, 0).is_ok());
  EXPECT_STATUS(bad_utf8.finalize().status(), ErrorCode::kInvalidArgument, "UTF-8");
}

TEST(SafetensorsWriter, OffsetsOverflow) {
  // 16 tensors of 2^60 bytes: the 16th would end at 2^64.
  SafetensorsLayout layout;
  const uint64_t n = uint64_t{1} << 60;
  for (int i = 0; i < 16; ++i) {
    char name[8];
    std::snprintf(name, sizeof name, "t%d", i);
    ASSERT_TRUE(layout.add_tensor(name, Dtype::kU8, {n}, n).is_ok());
  }
  EXPECT_STATUS(layout.finalize().status(), ErrorCode::kOverflow, "'t15'");
}

TEST(SafetensorsWriter, HeaderTooLarge) {
  SafetensorsLayout layout;
  ASSERT_TRUE(layout.set_metadata({{"big", std::string(kMaxHeaderBytes, 'x')}}).is_ok());
  EXPECT_STATUS(layout.finalize().status(), ErrorCode::kHeaderTooLarge, "Max_Header_Bytes");
}

TEST(SafetensorsWriter, WriteSafetensorsAndOpen) {
  test::ScratchDir dir;
  const std::vector<uint8_t> w = iota_bytes(8, 7);
  const std::vector<TensorData> tensors = {{"w", Dtype::kF16, {4}, w}};
  const std::string path = dir.file("m.safetensors");
  ASSERT_TRUE(write_safetensors(path, tensors, nullptr).is_ok());
  EXPECT_EQ(dir.list(), std::vector<std::string>{"m.safetensors"});

  Result<SafetensorsFile> f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_FALSE(f->header().has_metadata);
  Result<std::span<const uint8_t>> bytes = f->tensor_bytes("w");
  ASSERT_TRUE(bytes.is_ok());
  EXPECT_EQ(std::vector<uint8_t>(bytes->begin(), bytes->end()), w);
  f->release(f->header().tensors[0]);  // dropping pages must not change what is read
  EXPECT_EQ(std::vector<uint8_t>(bytes->begin(), bytes->end()), w);
  EXPECT_STATUS(f->tensor_bytes("nope").status(), ErrorCode::kNotFound, "m.safetensors", "'nope'");

  // An invalid layout writes nothing at all.
  const std::vector<TensorData> bad = {{"w", Dtype::kF32, {4}, w}};
  EXPECT_STATUS(write_safetensors(dir.file("bad.safetensors"), bad, nullptr),
                ErrorCode::kInvalidArgument, "bad.safetensors", "'w'");
  EXPECT_EQ(dir.list(), std::vector<std::string>{"m.safetensors"});
}

TEST(SafetensorsWriter, OpenReportsParseErrorsWithThePath) {
  test::ScratchDir dir;
  const std::string path = dir.file("short.safetensors");
  ASSERT_TRUE(write_file_atomic(path, std::string_view("abc")).is_ok());
  EXPECT_STATUS(SafetensorsFile::open(path).status(), ErrorCode::kTruncated, path.c_str());
  EXPECT_STATUS(SafetensorsFile::open(dir.file("missing")).status(), ErrorCode::kNotFound,
                "missing");
}

}  // namespace
}  // namespace df11
