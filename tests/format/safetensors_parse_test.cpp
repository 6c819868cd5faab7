// parse_safetensors(): one hand-built file per rule of spec 2.3, valid and invalid.
#include <gtest/gtest.h>

#include <string>

#include "df11/safetensors.h"
#include "format_test_util.h"

namespace df11 {
namespace {

using test::make_safetensors;

using namespace std::string_literals;

const std::string kFile = "bad.safetensors";

Result<SafetensorsHeader> parse_text(std::string_view header, uint64_t data_bytes) {
  return parse_safetensors(make_safetensors(header, data_bytes), kFile);
}

// Two F32 tensors and metadata, header padded to 8 bytes as writers do.
std::vector<uint8_t> valid_file() {
  std::string header = R"({"__metadata__":{"format":"pt","z":"last"},)"
                       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
                       R"("a":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  return make_safetensors(header, 16);
}

TEST(SafetensorsParse, ValidFileGivesTensorsInOffsetOrder) {
  const std::vector<uint8_t> bytes = valid_file();
  Result<SafetensorsHeader> h = parse_safetensors(bytes, "ok.safetensors");
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  EXPECT_EQ(h->file_name, "ok.safetensors");
  EXPECT_EQ(h->file_size, bytes.size());
  EXPECT_EQ(h->data_start, bytes.size() - 16);
  EXPECT_EQ(h->data_size, 16u);
  ASSERT_EQ(h->tensors.size(), 2u);
  EXPECT_EQ(h->tensors[0].name, "a");
  EXPECT_EQ(h->tensors[0].dtype, Dtype::kBF16);
  EXPECT_EQ(h->tensors[0].shape, (std::vector<uint64_t>{2, 2}));
  EXPECT_EQ(h->tensors[0].n_elements, 4u);
  EXPECT_EQ(h->tensors[0].data_offset_begin, 0u);
  EXPECT_EQ(h->tensors[0].data_offset_end, 8u);
  EXPECT_EQ(h->tensors[0].file_offset, h->data_start);
  EXPECT_EQ(h->tensors[1].name, "b");
  EXPECT_EQ(h->tensors[1].file_offset, h->data_start + 8);
  EXPECT_EQ(h->find("b"), &h->tensors[1]);
  EXPECT_EQ(h->find("c"), nullptr);
  EXPECT_TRUE(h->has_metadata);
  ASSERT_EQ(h->metadata.size(), 2u);
  EXPECT_EQ(h->metadata[0], (std::pair<std::string, std::string>{"format", "pt"}));
  EXPECT_EQ(h->metadata[1], (std::pair<std::string, std::string>{"z", "last"}));
  ASSERT_NE(h->metadata_value("z"), nullptr);
  EXPECT_EQ(*h->metadata_value("z"), "last");
  EXPECT_EQ(h->metadata_value("missing"), nullptr);
  // The exact header bytes, padding included, are kept for byte-exact rewriting.
  EXPECT_EQ(h->header_text, std::string(bytes.begin() + 8, bytes.end() - 16));
  EXPECT_EQ(h->header_text.back(), ' ');
}

// A file that is not at hand (a Hub file read with Range requests): its first 8 + N bytes
// and its size give the same header as the whole file.
TEST(SafetensorsParse, HeaderFromThePrefixAndTheSize) {
  const std::vector<uint8_t> bytes = valid_file();
  const Result<SafetensorsHeader> whole = parse_safetensors(bytes, kFile);
  ASSERT_TRUE(whole.is_ok());
  const std::span<const uint8_t> prefix(bytes.data(), whole->data_start);
  const Result<SafetensorsHeader> h = parse_safetensors_header(prefix, bytes.size(), kFile);
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  EXPECT_EQ(h->header_text, whole->header_text);
  EXPECT_EQ(h->file_size, whole->file_size);
  ASSERT_EQ(h->tensors.size(), whole->tensors.size());
  for (size_t i = 0; i < h->tensors.size(); ++i) {
    EXPECT_EQ(h->tensors[i].name, whole->tensors[i].name);
    EXPECT_EQ(h->tensors[i].file_offset, whole->tensors[i].file_offset);
  }
  // Fewer bytes than the header says: truncated, named.
  const Result<SafetensorsHeader> short_prefix =
      parse_safetensors_header(prefix.first(prefix.size() - 1), bytes.size(), kFile);
  EXPECT_EQ(short_prefix.status().code(), ErrorCode::kTruncated);
  EXPECT_NE(short_prefix.status().message().find(kFile + ": header length"), std::string::npos);
  EXPECT_EQ(parse_safetensors_header(prefix.first(7), bytes.size(), kFile).status().code(),
            ErrorCode::kTruncated);
  // The length itself is checked against the file size given (H3), not the prefix.
  EXPECT_EQ(parse_safetensors_header(prefix, whole->data_start - 1, kFile).status().code(),
            ErrorCode::kInvalidArgument);  // the prefix is longer than that "file"
  EXPECT_EQ(parse_safetensors_header(prefix.first(8), whole->data_start - 1, kFile).status().code(),
            ErrorCode::kHeaderTooLarge);
  // The data after the header is not looked at: a size that leaves a hole is an offsets error.
  EXPECT_EQ(parse_safetensors_header(prefix, bytes.size() + 2, kFile).status().code(),
            ErrorCode::kBadOffsets);
}

TEST(SafetensorsParse, EmptyHeaderAndEdgeShapesAreValid) {
  Result<SafetensorsHeader> h = parse_text("{}", 0);
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  EXPECT_TRUE(h->tensors.empty());
  EXPECT_FALSE(h->has_metadata);

  // A scalar (shape []), empty tensors sharing an offset, and a sub-byte dtype.
  h = parse_text(R"({"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]},)"
                 R"("e1":{"dtype":"F32","shape":[0,5],"data_offsets":[8,8]},)"
                 R"("e0":{"dtype":"U8","shape":[0],"data_offsets":[8,8]},)"
                 R"("f4":{"dtype":"F4","shape":[2,3],"data_offsets":[8,11]}}   )",
                 11);
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  ASSERT_EQ(h->tensors.size(), 4u);
  EXPECT_EQ(h->tensors[0].name, "s");
  EXPECT_EQ(h->tensors[0].n_elements, 1u);
  // Equal offsets keep document order.
  EXPECT_EQ(h->tensors[1].name, "e1");
  EXPECT_EQ(h->tensors[2].name, "e0");
  EXPECT_EQ(h->tensors[3].name, "f4");
  EXPECT_EQ(h->tensors[3].byte_size(), 3u);

  // "-0" is the integer zero.
  h = parse_text(R"({"z":{"dtype":"U8","shape":[-0],"data_offsets":[0,-0]}})", 0);
  EXPECT_TRUE(h.is_ok()) << h.status().to_string();
}

TEST(SafetensorsParse, EveryDtypeNameParses) {
  for (int i = 0; i < kDtypeCount; ++i) {
    const Dtype d = static_cast<Dtype>(i);
    const uint64_t bytes = 8 * dtype_bits(d) / 8;  // shape [8] fills whole bytes for all
    const std::string header = std::string(R"({"t":{"dtype":")") + dtype_name(d) +
                               R"(","shape":[8],"data_offsets":[0,)" + std::to_string(bytes) +
                               "]}}";
    Result<SafetensorsHeader> h = parse_text(header, bytes);
    ASSERT_TRUE(h.is_ok()) << dtype_name(d) << ": " << h.status().to_string();
    EXPECT_EQ(h->tensors[0].dtype, d);
  }
}

// H1..H3: cutting a valid file anywhere gives a precise error, never a crash.
TEST(SafetensorsParse, TruncationAtEveryLength) {
  const std::vector<uint8_t> bytes = valid_file();
  const size_t data_start = bytes.size() - 16;
  for (size_t len = 0; len < bytes.size(); ++len) {
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + len);
    Result<SafetensorsHeader> h = parse_safetensors(cut, kFile);
    ASSERT_FALSE(h.is_ok()) << "length " << len;
    if (len < 8) {
      EXPECT_STATUS(h.status(), ErrorCode::kTruncated, "bad.safetensors", "8-byte");
    } else if (len < data_start) {
      EXPECT_STATUS(h.status(), ErrorCode::kHeaderTooLarge, "bad.safetensors", "truncated");
    } else {
      // The data is cut: some tensor runs past the end of the file.
      EXPECT_STATUS(h.status(), ErrorCode::kBadOffsets, "bad.safetensors", "past the end");
    }
  }
}

TEST(SafetensorsParse, HeaderLengthBeyondLimitOrFile) {
  // H2: beyond Max_Header_Bytes, checked before anything is read, without overflow.
  for (uint64_t n : {kMaxHeaderBytes + 1, uint64_t{1} << 63, UINT64_MAX - 7, UINT64_MAX - 1}) {
    Result<SafetensorsHeader> h = parse_safetensors(make_safetensors("{}", 0, n), kFile);
    EXPECT_STATUS(h.status(), ErrorCode::kHeaderTooLarge, "bad.safetensors", "Max_Header_Bytes");
  }
  // H3: within the limit but beyond the file.
  Result<SafetensorsHeader> h = parse_safetensors(make_safetensors("{}", 0, 3), kFile);
  EXPECT_STATUS(h.status(), ErrorCode::kHeaderTooLarge, "bad.safetensors", "exceeds the 2 bytes");
  h = parse_safetensors(make_safetensors("{}", 0, kMaxHeaderBytes), kFile);
  EXPECT_STATUS(h.status(), ErrorCode::kHeaderTooLarge, "bad.safetensors");
}

TEST(SafetensorsParse, HeaderIsNotAJsonObject) {
  struct Case {
    std::string header;
    const char* fragment;
  };
  const Case cases[] = {
      {"", "start with '{'"},
      {" {}", "start with '{'"},  // H4: MUST begin with '{'
      {"[1, 2]", "start with '{'"},
      {"\xef\xbb\xbf{}", "start with '{'"},  // a UTF-8 BOM is not allowed either
      {"{", "invalid JSON"},
      {R"({"a":)", "invalid JSON"},
      {"{} x", "invalid JSON"},             // trailing garbage
      {"{}\0\0"s, "NUL byte"},              // NUL padding (only whitespace may pad)
      {"{}\0{\"hidden\":1}"s, "NUL byte"},  // nlohmann alone would stop at the NUL
      {"{\"a\0\":{}}"s, "NUL byte"},
      {"{\"\xff\":{}}", "invalid JSON"},                      // invalid UTF-8
      {"{\"a\":{\"dtype\":\"U8\"} // c\n}", "invalid JSON"},  // no comments
      {R"({"a":[[[[[[]]]]]]})", "nested deeper"},
  };
  for (const Case& c : cases) {
    const std::string& header = c.header;
    SCOPED_TRACE(header);
    Result<SafetensorsHeader> h = parse_text(header, 0);
    EXPECT_STATUS(h.status(), ErrorCode::kBadJson, "bad.safetensors", c.fragment);
  }
}

TEST(SafetensorsParse, WhitespacePaddingIsKept) {
  Result<SafetensorsHeader> h = parse_text("{}\n\t\r  ", 0);
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  EXPECT_EQ(h->header_text, "{}\n\t\r  ");
}

TEST(SafetensorsParse, BadDtype) {
  Result<SafetensorsHeader> h =
      parse_text(R"({"w":{"dtype":"F17","shape":[1],"data_offsets":[0,2]}})", 2);
  EXPECT_STATUS(h.status(), ErrorCode::kBadDtype, "bad.safetensors", "tensor 'w'", "'F17'");
  h = parse_text(R"({"w":{"dtype":"bf16","shape":[1],"data_offsets":[0,2]}})", 2);
  EXPECT_STATUS(h.status(), ErrorCode::kBadDtype, "bad.safetensors", "tensor 'w'", "'bf16'");
  h = parse_text(R"({"w":{"dtype":16,"shape":[1],"data_offsets":[0,2]}})", 2);
  EXPECT_STATUS(h.status(), ErrorCode::kBadDtype, "bad.safetensors", "tensor 'w'", "not a string");
}

TEST(SafetensorsParse, BadShape) {
  const char* shapes[] = {"[-1]",
                          "[1.5]",
                          "[2.0]",
                          "[1e1]",
                          "[\"2\"]",
                          "[null]",
                          "2",
                          "{}",
                          "[[2]]",
                          "[true]",
                          "[18446744073709551616]"};
  for (const char* shape : shapes) {
    const std::string header =
        std::string(R"({"w":{"dtype":"U8","shape":)") + shape + R"(,"data_offsets":[0,2]}})";
    Result<SafetensorsHeader> h = parse_text(header, 2);
    SCOPED_TRACE(shape);
    EXPECT_STATUS(h.status(), ErrorCode::kBadShape, "bad.safetensors", "tensor 'w'");
  }
  // T3: at most Max_Rank dimensions.
  std::string rank = "[1";
  for (size_t i = 1; i <= kMaxRank; ++i) rank += ",1";
  Result<SafetensorsHeader> h =
      parse_text(R"({"w":{"dtype":"U8","shape":)" + rank + R"(],"data_offsets":[0,1]}})", 1);
  EXPECT_STATUS(h.status(), ErrorCode::kBadShape, "bad.safetensors", "tensor 'w'", "Max_Rank");
  // T6: a sub-byte dtype must fill whole bytes.
  h = parse_text(R"({"w":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", 2);
  EXPECT_STATUS(h.status(), ErrorCode::kBadShape, "bad.safetensors", "tensor 'w'", "12 bits");
  h = parse_text(R"({"w":{"dtype":"F6_E2M3","shape":[2],"data_offsets":[0,2]}})", 2);
  EXPECT_STATUS(h.status(), ErrorCode::kBadShape, "bad.safetensors", "tensor 'w'", "whole");
}

TEST(SafetensorsParse, ShapeTimesSizeOverflow) {
  // 2^62 * 8 elements overflow; so does 2^62 F32 elements' bit count.
  const char* cases[] = {
      R"({"w":{"dtype":"U8","shape":[4611686018427387904,8],"data_offsets":[0,0]}})",
      R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})",
      R"({"w":{"dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}})",
  };
  for (const char* header : cases) {
    Result<SafetensorsHeader> h = parse_text(header, 0);
    EXPECT_STATUS(h.status(), ErrorCode::kOverflow, "bad.safetensors", "tensor 'w'", "overflow");
  }
}

TEST(SafetensorsParse, SizeMismatch) {
  Result<SafetensorsHeader> h =
      parse_text(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4);
  EXPECT_STATUS(h.status(), ErrorCode::kBadShape, "bad.safetensors", "tensor 'w'", "needs 8 bytes",
                "hold 4");
}

TEST(SafetensorsParse, BadOffsets) {
  struct Case {
    std::string header;
    uint64_t data;
    std::vector<const char*> fragments;
  };
  const Case cases[] = {
      // O1 overlap.
      {R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
       R"("b":{"dtype":"U8","shape":[8],"data_offsets":[4,12]}})",
       12,
       {"tensor 'b'", "overlap tensor 'a'"}},
      // O1 overlap by an empty tensor inside another.
      {R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
       R"("b":{"dtype":"U8","shape":[0],"data_offsets":[4,4]}})",
       8,
       {"tensor 'b'", "overlap tensor 'a'"}},
      // O1 hole between tensors.
      {R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
       R"("b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}})",
       12,
       {"tensor 'b'", "hole", "[4, 8)"}},
      // O1 hole before the first tensor.
      {R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})", 8, {"tensor 'a'", "hole"}},
      // O1 trailing bytes after the last tensor.
      {R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 8, {"after the last tensor"}},
      // T8 out of bounds.
      {R"({"a":{"dtype":"U8","shape":[16],"data_offsets":[0,16]}})",
       8,
       {"tensor 'a'", "past the end"}},
      {R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[18446744073709551615,18446744073709551615]}})",
       0,
       {"tensor 'a'", "past the end"}},
      // T4 end before begin.
      {R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[8,4]}})",
       8,
       {"tensor 'a'", "end before begin"}},
      // T4 not a pair of non-negative integers.
      {R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0]}})", 4, {"tensor 'a'", "pair"}},
      {R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4,4]}})", 4, {"tensor 'a'", "pair"}},
      {R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[-4,0]}})", 4, {"tensor 'a'", "pair"}},
      {R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0.0,4]}})", 4, {"tensor 'a'", "pair"}},
      {R"({"a":{"dtype":"U8","shape":[4],"data_offsets":["0",4]}})", 4, {"tensor 'a'", "pair"}},
      {R"({"a":{"dtype":"U8","shape":[4],"data_offsets":{"0":4}}})", 4, {"tensor 'a'", "pair"}},
  };
  for (const Case& c : cases) {
    Result<SafetensorsHeader> h = parse_text(c.header, c.data);
    EXPECT_EQ(h.status().code(), ErrorCode::kBadOffsets) << c.header << "\n"
                                                         << h.status().to_string();
    EXPECT_NE(h.status().message().find("bad.safetensors"), std::string::npos);
    for (const char* f : c.fragments) {
      EXPECT_NE(h.status().message().find(f), std::string::npos)
          << "lacks \"" << f << "\": " << h.status().message();
    }
  }
}

TEST(SafetensorsParse, DuplicateNames) {
  Result<SafetensorsHeader> h =
      parse_text(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                 R"("w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                 2);
  EXPECT_STATUS(h.status(), ErrorCode::kDuplicateName, "bad.safetensors", "duplicate tensor name",
                "'w'");
  h = parse_text(R"({"__metadata__":{},"__metadata__":{}})", 0);
  EXPECT_STATUS(h.status(), ErrorCode::kDuplicateName, "bad.safetensors", "'__metadata__'");
  // A field twice inside one entry, or a metadata key twice, is malformed JSON for safetensors.
  h = parse_text(R"({"w":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 1);
  EXPECT_STATUS(h.status(), ErrorCode::kBadJson, "bad.safetensors", "duplicate key 'dtype'",
                "inside 'w'");
  h = parse_text(R"({"__metadata__":{"k":"1","k":"2"}})", 0);
  EXPECT_STATUS(h.status(), ErrorCode::kBadJson, "bad.safetensors", "duplicate key 'k'");
}

TEST(SafetensorsParse, MetadataMustMapStringsToStrings) {
  const char* cases[] = {
      R"({"__metadata__":{"k":1}})",
      R"({"__metadata__":{"k":null}})",
      R"({"__metadata__":{"k":["v"]}})",
      R"({"__metadata__":{"k":{"x":"y"}}})",
      R"({"__metadata__":{"a":"ok","k":true}})",
  };
  for (const char* header : cases) {
    Result<SafetensorsHeader> h = parse_text(header, 0);
    EXPECT_STATUS(h.status(), ErrorCode::kBadJson, "bad.safetensors", "__metadata__", "'k'",
                  "not a string");
  }
  Result<SafetensorsHeader> h = parse_text(R"({"__metadata__":["k","v"]})", 0);
  EXPECT_STATUS(h.status(), ErrorCode::kBadJson, "bad.safetensors", "__metadata__",
                "not a JSON object");
}

TEST(SafetensorsParse, TensorEntryFields) {
  Result<SafetensorsHeader> h =
      parse_text(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"extra":0}})", 1);
  EXPECT_STATUS(h.status(), ErrorCode::kBadJson, "bad.safetensors", "tensor 'w'",
                "unknown field 'extra'");
  h = parse_text(R"({"w":{"dtype":"U8","shape":[1]}})", 0);
  EXPECT_STATUS(h.status(), ErrorCode::kBadJson, "bad.safetensors", "tensor 'w'",
                "missing field 'data_offsets'");
  h = parse_text(R"({"w":{"shape":[1],"data_offsets":[0,1]}})", 1);
  EXPECT_STATUS(h.status(), ErrorCode::kBadJson, "tensor 'w'", "missing field 'dtype'");
  h = parse_text(R"({"w":[0,1]})", 1);
  EXPECT_STATUS(h.status(), ErrorCode::kBadJson, "bad.safetensors", "tensor 'w'",
                "not a JSON object");
  h = parse_text(R"({"w":"U8"})", 0);
  EXPECT_STATUS(h.status(), ErrorCode::kBadJson, "tensor 'w'", "not a JSON object");
}

TEST(SafetensorsParse, NamesInMessagesAreEscaped) {
  Result<SafetensorsHeader> h =
      parse_text("{\"a\\nb\":{\"dtype\":\"X\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1);
  EXPECT_STATUS(h.status(), ErrorCode::kBadDtype, "tensor 'a\\x0ab'");
}

TEST(SafetensorsParse, TooManyTensors) {
  // H6: Max_Tensors + 1 empty tensors (about 40 MB of header).
  std::string header = "{";
  header.reserve(44 * (kMaxTensors + 1));
  for (uint64_t i = 0; i <= kMaxTensors; ++i) {
    if (i) header += ',';
    header += '"' + std::to_string(i) + R"(":{"dtype":"U8","shape":[0],"data_offsets":[0,0]})";
  }
  header += '}';
  ASSERT_LE(header.size(), kMaxHeaderBytes);
  Result<SafetensorsHeader> h = parse_text(header, 0);
  EXPECT_STATUS(h.status(), ErrorCode::kResourceLimit, "bad.safetensors", "Max_Tensors");
}

}  // namespace
}  // namespace df11
