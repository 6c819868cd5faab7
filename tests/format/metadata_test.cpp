// df11 metadata (spec 5): round trip and one invalid document per rule.
#include "df11/metadata.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "format_test_util.h"

namespace df11 {
namespace {

using nlohmann::json;

const std::string kFile = "model-00001-of-00002.safetensors";
const std::string kHex16 = "0123456789abcdef";
const std::string kHex64 = std::string(64, 'a');

StoredChecksums stored(char c) {
  const std::string h(16, c);
  return StoredChecksums{h, h, h, h, h, h};
}

Df11Metadata valid_metadata() {
  Df11Metadata m;
  m.encoder = "df11 0.1.0";
  GroupMeta g0;
  g0.name = "model.layers.0";
  g0.members = {
      {"model.layers.0.self_attn.q_proj.weight", "BF16", {4, 8}, 32, kHex16, ""},
      {"model.layers.0.mlp.up_proj.weight", "BF16", {16, 8}, 128, "fedcba9876543210", ""},
  };
  g0.n_elements = 160;
  g0.stored = stored('1');
  GroupMeta g1;
  g1.name = "lm_head";
  g1.members = {{"lm_head.weight", "BF16", {0, 5}, 0, kHex16, ""}};
  g1.stored = stored('2');
  m.groups = {g0, g1};
  m.tensors = {{"model.norm.weight", "00000000000000ff"}, {"a.bias", "1111111111111111"}};
  m.sources = {{kFile, 4096, kHex64, "{\"__metadata__\":{\"format\":\"pt\"}}    "}};
  m.side_files = {{"config.json", 13, std::string(64, 'b'), "{\"x\": \"\xc3\xa9\"}\n\t"}};
  m.side_files[0].size = m.side_files[0].content.size();
  m.shards = {{kFile, "model-00002-of-00002.safetensors"}};
  m.folder_files = {{{"config.json", 12, std::string(64, 'c')},
                     {"original/params.json", 0, std::string(64, 'd')},
                     {"tokenizer.json", 7, std::string(64, 'e')}}};
  return m;
}

json valid_json() {
  Result<std::string> text = serialize_df11_metadata(valid_metadata());
  EXPECT_TRUE(text.is_ok());
  return json::parse(*text);
}

Status parse(const json& j) { return parse_df11_metadata(j.dump(), kFile).status(); }

TEST(Df11Metadata, RoundTripIsExactAndDeterministic) {
  const Df11Metadata m = valid_metadata();
  Result<std::string> text = serialize_df11_metadata(m);
  ASSERT_TRUE(text.is_ok()) << text.status().to_string();
  Result<Df11Metadata> back = parse_df11_metadata(*text, kFile);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  // Raw tensors come back sorted by name; everything else as written.
  Df11Metadata sorted = m;
  std::swap(sorted.tensors[0], sorted.tensors[1]);
  EXPECT_EQ(*back, sorted);
  Result<std::string> again = serialize_df11_metadata(*back);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(*again, *text);
  // Fixed key order.
  EXPECT_EQ(text->rfind(R"({"spec_version":"1.3","encoder":"df11 0.1.0","groups":[{"name":)", 0),
            0u)
      << *text;
  EXPECT_NE(text->find(R"(],"shards":[")" + kFile +
                       R"(","model-00002-of-00002.safetensors"],)"
                       R"("folder_files":[{"file":"config.json","size":12,"sha256":"cccc)"),
            std::string::npos)
      << *text;
}

TEST(Df11Metadata, OptionalArraysUnknownTopLevelKeysAndMinorVersions) {
  json j = valid_json();
  j.erase("sources");
  j.erase("side_files");
  j["spec_version"] = "1.7";
  j["future_field"] = {{"nested", {1, 2, 3}}};
  Result<Df11Metadata> m = parse_df11_metadata(j.dump(), kFile);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_TRUE(m->sources.empty());
  EXPECT_TRUE(m->side_files.empty());
  EXPECT_EQ(m->spec_version, "1.7");
  // Empty groups and tensors are a valid (all-raw or all-coded) shard.
  j["groups"] = json::array();
  j["tensors"] = json::object();
  EXPECT_TRUE(parse(j).is_ok());
}

// spec 5.3 (1.2): a source's sha256 is optional; absent, it is "not recorded" (empty) and stays
// absent through a round trip; present, it is checked as before (S2). Side files still need one.
TEST(Df11Metadata, SourceSha256IsOptionalButCheckedWhenPresent) {
  Df11Metadata m = valid_metadata();
  m.sources[0].sha256.clear();
  Result<std::string> text = serialize_df11_metadata(m);
  ASSERT_TRUE(text.is_ok()) << text.status().to_string();
  EXPECT_NE(text->find(R"("sources":[{"file":")" + kFile + R"(","size":4096,"header":)"),
            std::string::npos)
      << *text;
  Result<Df11Metadata> back = parse_df11_metadata(*text, kFile);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->sources[0].sha256, "");
  Result<std::string> again = serialize_df11_metadata(*back);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(*again, *text);

  for (const std::string& bad :
       std::vector<std::string>{"", "0", std::string(63, 'a'), std::string(65, 'a'),
                                std::string(64, 'A'), std::string(63, 'a') + "g"}) {
    SCOPED_TRACE(bad);
    json j = valid_json();
    j["sources"][0]["sha256"] = bad;
    EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "sources[0]", "64 lowercase hex");
  }
  json j = valid_json();
  j["sources"][0]["sha256"] = nullptr;
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'sha256'");
  j = valid_json();
  j["side_files"][0].erase("sha256");
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "side_files[0]", "missing field 'sha256'");
}

TEST(Df11Metadata, NotJsonOrNotAnObject) {
  EXPECT_STATUS(parse_df11_metadata("{", kFile).status(), ErrorCode::kBadJson, kFile.c_str(),
                "df11 metadata");
  EXPECT_STATUS(parse_df11_metadata(std::string_view("{}\0{}", 5), kFile).status(),
                ErrorCode::kBadJson, "NUL");
  EXPECT_STATUS(parse_df11_metadata("[]", kFile).status(), ErrorCode::kBadMetadata, kFile.c_str(),
                "not a JSON object");
  json j = valid_json();
  j["deep"] = json::parse(std::string(40, '[') + std::string(40, ']'));
  EXPECT_STATUS(parse(j), ErrorCode::kBadJson, "nested deeper");
  const std::string dup = R"({"spec_version":"1.0","spec_version":"1.0"})";
  EXPECT_STATUS(parse_df11_metadata(dup, kFile).status(), ErrorCode::kDuplicateName,
                "'spec_version'");
}

TEST(Df11Metadata, TopLevelFields) {
  for (const char* key : {"spec_version", "encoder", "groups", "tensors"}) {
    json j = valid_json();
    j.erase(key);
    EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, kFile.c_str(), "missing field", key);
  }
  json j = valid_json();
  j["encoder"] = 1;
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'encoder' is not a string");
  j = valid_json();
  j["groups"] = json::object();
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'groups' is not an array");
  j = valid_json();
  j["tensors"] = json::array();
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'tensors' is not a JSON object");
  j = valid_json();
  j["sources"] = json::object();
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'sources' is not an array");
}

TEST(Df11Metadata, SpecVersion) {
  for (const char* v : {"2.0", "0.9", "10.0"}) {
    json j = valid_json();
    j["spec_version"] = v;
    EXPECT_STATUS(parse(j), ErrorCode::kUnsupported, kFile.c_str(), v, "not supported");
  }
  for (const char* v : {"1", "1.", ".0", "1.0.0", "v1.0", "1.x", ""}) {
    json j = valid_json();
    j["spec_version"] = v;
    EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "MAJOR.MINOR");
  }
  json j = valid_json();
  j["spec_version"] = 1.0;
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'spec_version' is not a string");
}

TEST(Df11Metadata, GroupFields) {
  json j = valid_json();
  j["groups"][0]["extra"] = 1;
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "groups[0] 'model.layers.0'",
                "unknown field 'extra'");
  for (const char* key : {"name", "n_elements", "members", "stored"}) {
    j = valid_json();
    j["groups"][1].erase(key);
    EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "groups[1]", "missing field", key);
  }
  j = valid_json();
  j["groups"][0] = "model.layers.0";
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "groups[0]", "not a JSON object");
  j = valid_json();
  j["groups"][0]["name"] = "";
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "groups[0]", "'name' is empty");
  j = valid_json();
  j["groups"][1]["name"] = "model.layers.0";
  EXPECT_STATUS(parse(j), ErrorCode::kDuplicateName, "group 'model.layers.0' appears twice");
  for (json bad : {json(-1), json(1.5), json("160"), json(nullptr)}) {
    j = valid_json();
    j["groups"][0]["n_elements"] = bad;
    EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'model.layers.0'", "'n_elements'",
                  "non-negative integer");
  }
  j = valid_json();
  j["groups"][0]["n_elements"] = 161;
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'model.layers.0'", "161",
                "sum of the members' n_elements 160");
  j = valid_json();
  j["groups"][0]["members"] = json::array();
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'model.layers.0'", "members is empty");
  j = valid_json();
  j["groups"][0]["members"] = json::object();
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "members is not an array");
}

TEST(Df11Metadata, MemberFields) {
  json j = valid_json();
  j["groups"][0]["members"][1]["dtype"] = "F16";
  EXPECT_STATUS(parse(j), ErrorCode::kBadDtype, kFile.c_str(), "members[1]",
                "'model.layers.0.mlp.up_proj.weight'", "must be BF16");
  for (json shape : {json::parse("[-1, 8]"), json::parse("[1.5]"), json::parse("[\"4\"]"),
                     json::parse("4"), json::parse("[[4]]")}) {
    j = valid_json();
    j["groups"][0]["members"][0]["shape"] = shape;
    EXPECT_STATUS(parse(j), ErrorCode::kBadShape, "'model.layers.0.self_attn.q_proj.weight'");
  }
  j = valid_json();
  j["groups"][0]["members"][0]["shape"] = json::array({uint64_t{1} << 62, 8});
  EXPECT_STATUS(parse(j), ErrorCode::kOverflow, "q_proj", "overflows");
  j = valid_json();
  j["groups"][0]["members"][0]["n_elements"] = 33;
  EXPECT_STATUS(parse(j), ErrorCode::kBadShape, "q_proj",
                "n_elements 33 != product of shape [4, 8]");
  for (const char* hex : {"0123456789ABCDEF", "0123456789abcde", "0123456789abcdef0", "xyz"}) {
    j = valid_json();
    j["groups"][0]["members"][0]["xxh3"] = hex;
    EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "q_proj", "'xxh3'", "16 lowercase hex");
  }
  j = valid_json();
  j["groups"][0]["members"][0]["bias"] = true;
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "members[0]", "unknown field 'bias'");
  j = valid_json();
  j["groups"][0]["members"][0].erase("xxh3");
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "members[0]", "missing field 'xxh3'");
  j = valid_json();
  j["groups"][0]["members"][0]["name"] = "";
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "members[0]", "'name' is empty");
}

TEST(Df11Metadata, AliasMembers) {
  // spec 5.3 (1.2): alias_of round-trips, after xxh3, only when set.
  Df11Metadata m = valid_metadata();
  m.groups[1].members[0].alias_of = "model.embed_tokens.weight";
  Result<std::string> text = serialize_df11_metadata(m);
  ASSERT_TRUE(text.is_ok());
  EXPECT_NE(text->find(R"("xxh3":"0123456789abcdef","alias_of":"model.embed_tokens.weight"})"),
            std::string::npos)
      << *text;
  EXPECT_EQ(text->find("alias_of"), text->rfind("alias_of")) << *text;
  Result<Df11Metadata> back = parse_df11_metadata(*text, kFile);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->groups[1].members[0].alias_of, "model.embed_tokens.weight");
  json j = valid_json();
  j["groups"][1]["members"][0]["alias_of"] = "";
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'lm_head.weight'", "'alias_of' is empty");
  j["groups"][1]["members"][0]["alias_of"] = "lm_head.weight";
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "alias_of names the member itself");
  j["groups"][1]["members"][0]["alias_of"] = 7;
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'alias_of' is not a string");
}

TEST(Df11Metadata, MemberSumOverflow) {
  json j = valid_json();
  const uint64_t half = uint64_t{1} << 63;
  j["groups"][0]["members"][0]["shape"] = json::array({half});
  j["groups"][0]["members"][0]["n_elements"] = half;
  j["groups"][0]["members"][1]["shape"] = json::array({half});
  j["groups"][0]["members"][1]["n_elements"] = half;
  EXPECT_STATUS(parse(j), ErrorCode::kOverflow, "'model.layers.0'", "overflow");
}

TEST(Df11Metadata, TensorNamesAreUniqueModelWide) {
  json j = valid_json();
  j["groups"][1]["members"][0]["name"] = "model.layers.0.mlp.up_proj.weight";
  EXPECT_STATUS(parse(j), ErrorCode::kDuplicateName, "'model.layers.0.mlp.up_proj.weight'",
                "appears twice");
  j = valid_json();
  j["tensors"]["lm_head.weight"] = {{"xxh3", kHex16}};
  EXPECT_STATUS(parse(j), ErrorCode::kDuplicateName, "'lm_head.weight'", "appears twice");
  const std::string text =
      R"({"spec_version":"1.0","encoder":"","groups":[],)"
      R"("tensors":{"w":{"xxh3":"0123456789abcdef"},"w":{"xxh3":"0123456789abcdef"}}})";
  EXPECT_STATUS(parse_df11_metadata(text, kFile).status(), ErrorCode::kDuplicateName, "'w'");
}

TEST(Df11Metadata, StoredChecksums) {
  for (const GroupTensorSpec& t : kGroupTensors) {
    const std::string key(t.name());
    json j = valid_json();
    j["groups"][1]["stored"][key] = "0123";
    EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'lm_head': stored", key, "16 lowercase hex");
    j = valid_json();
    j["groups"][1]["stored"].erase(key);
    EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'lm_head': stored", "missing field", key);
  }
  json j = valid_json();
  j["groups"][1]["stored"]["scales"] = kHex16;
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "stored", "unknown field 'scales'");
}

TEST(Df11Metadata, RawTensors) {
  json j = valid_json();
  j["tensors"]["model.norm.weight"] = kHex16;
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "tensors 'model.norm.weight'",
                "not a JSON object");
  j = valid_json();
  j["tensors"]["model.norm.weight"]["dtype"] = "F32";
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'model.norm.weight'", "unknown field 'dtype'");
  j = valid_json();
  j["tensors"]["model.norm.weight"]["xxh3"] = "FF";
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'model.norm.weight'", "16 lowercase hex");
  j = valid_json();
  j["tensors"][""] = {{"xxh3", kHex16}};
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "empty name");
}

TEST(Df11Metadata, SourcesAndSideFiles) {
  for (const char* name : {"", ".", "..", "../model.safetensors", "a/b", "/etc/passwd"}) {
    json j = valid_json();
    j["sources"][0]["file"] = name;
    EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "sources[0]", "plain file name");
    j = valid_json();
    j["side_files"][0]["file"] = name;
    EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "side_files[0]", "plain file name");
  }
  json j = valid_json();
  j["sources"][0]["file"] = std::string(kMaxFileNameBytes + 1, 'f');
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "plain file name");
  j = valid_json();
  j["side_files"][0]["file"] = kFile;  // sources and side files share the folder
  EXPECT_STATUS(parse(j), ErrorCode::kDuplicateName, kFile.c_str(), "appears twice");
  j = valid_json();
  j["sources"][0]["sha256"] = kHex16;
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'sha256'", "64 lowercase hex");
  j = valid_json();
  j["sources"][0]["header"] = " {}";
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "header is not a safetensors header");
  j = valid_json();
  const size_t header_bytes = j["sources"][0]["header"].get<std::string>().size();
  j["sources"][0]["size"] = 8 + header_bytes - 1;
  const std::string expected = "size " + std::to_string(7 + header_bytes) + " cannot hold its " +
                               std::to_string(header_bytes) + "-byte header";
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, expected.c_str());
  j["sources"][0]["size"] = 8 + header_bytes;  // an empty data buffer is possible
  EXPECT_TRUE(parse(j).is_ok());
  j = valid_json();
  j["sources"][0]["size"] = 3;
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "size 3 cannot hold");
  j = valid_json();
  j["side_files"][0]["size"] = 1;
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'config.json'", "size 1 but content has");
  j = valid_json();
  j["side_files"][0]["content"] = 7;
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'content' is not a string");
  j = valid_json();
  j["sources"][0]["mode"] = "0644";
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "sources[0]", "unknown field 'mode'");
}

TEST(Df11Metadata, FolderRecordIsOptionalButComplete) {
  // Absent (shards other than the first, and 1.0 documents): no record, not an empty one.
  json j = valid_json();
  j.erase("shards");
  j.erase("folder_files");
  Result<Df11Metadata> m = parse_df11_metadata(j.dump(), kFile);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_FALSE(m->shards.has_value());
  EXPECT_FALSE(m->folder_files.has_value());
  Result<std::string> text = serialize_df11_metadata(*m);
  ASSERT_TRUE(text.is_ok());
  EXPECT_EQ(text->find("shards"), std::string::npos);
  // Present but empty round-trips as present.
  j["shards"] = json::array();
  j["folder_files"] = json::array();
  m = parse_df11_metadata(j.dump(), kFile);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_TRUE(m->shards.has_value() && m->shards->empty());
  // One without the other.
  for (const char* key : {"shards", "folder_files"}) {
    j = valid_json();
    j.erase(key);
    EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "must be present together");
  }
}

TEST(Df11Metadata, FolderRecordRules) {
  // P1: shard names are plain *.safetensors names.
  for (const char* name : {"config.json", "a/b.safetensors", "../x.safetensors", ""}) {
    json j = valid_json();
    j["shards"][0] = name;
    EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "shards[0]", "plain *.safetensors");
  }
  json j = valid_json();
  j["shards"][0] = 3;
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "shards[0]", "not a string");
  // P2: folder file paths stay inside the folder.
  for (const char* path : {"", "/etc/passwd", "../x", "a/../b", "a//b", "a/", "./a", "a/."}) {
    j = valid_json();
    j["folder_files"][0]["file"] = path;
    EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "folder_files[0]",
                  "not a relative path inside the folder");
  }
  // P3: sorted, no repeats, no path that is also a shard.
  j = valid_json();
  std::swap(j["folder_files"][0], j["folder_files"][1]);
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "folder_files[1]", "out of order");
  j = valid_json();
  j["folder_files"][1] = j["folder_files"][0];
  EXPECT_STATUS(parse(j), ErrorCode::kDuplicateName, "folder_files[1]", "'config.json'",
                "appears twice");
  j = valid_json();
  j["shards"][1] = kFile;
  EXPECT_STATUS(parse(j), ErrorCode::kDuplicateName, "shards[1]", "appears twice");
  j = valid_json();
  j["shards"] = json::array({"config.json.safetensors"});
  j["folder_files"][0]["file"] = "config.json.safetensors";
  EXPECT_STATUS(parse(j), ErrorCode::kDuplicateName, "also listed in 'shards'");
  // Schema.
  j = valid_json();
  j["folder_files"][2]["sha256"] = kHex16;
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "'tokenizer.json'", "64 lowercase hex");
  j = valid_json();
  j["folder_files"][2]["content"] = "";
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "folder_files[2]", "unknown field 'content'");
  j = valid_json();
  j["folder_files"][0].erase("size");
  EXPECT_STATUS(parse(j), ErrorCode::kBadMetadata, "missing field 'size'");
}

TEST(Df11Metadata, SpecMinorVersion) {
  EXPECT_EQ(spec_minor_version("1.0"), 0);
  EXPECT_EQ(spec_minor_version("1.1"), 1);
  EXPECT_EQ(spec_minor_version("1.17"), 17);
  EXPECT_EQ(spec_minor_version(kDf11SpecVersion), kGuardMinor);
  EXPECT_GT(kGuardMinor, kAliasMinor);
  EXPECT_GT(kAliasMinor, kFolderRecordMinor);
}

TEST(Df11Metadata, CountLimits) {
  auto many = [](size_t n, const json& item) {
    json a = json::array();
    for (size_t i = 0; i < n; ++i) a.push_back(item);
    return a;
  };
  json j = valid_json();
  j["groups"] = many(kMaxGroups + 1, json::object());
  EXPECT_STATUS(parse(j), ErrorCode::kResourceLimit, "Max_Groups");
  j = valid_json();
  j["groups"][0]["members"] = many(kMaxMembersPerGroup + 1, json::object());
  EXPECT_STATUS(parse(j), ErrorCode::kResourceLimit, "Max_Members_Per_Group");
  j = valid_json();
  j["sources"] = many(kMaxSources + 1, json::object());
  EXPECT_STATUS(parse(j), ErrorCode::kResourceLimit, "Max_Sources");
  j = valid_json();
  j["side_files"] = many(kMaxSideFiles + 1, json::object());
  EXPECT_STATUS(parse(j), ErrorCode::kResourceLimit, "Max_Side_Files");
  j = valid_json();
  j["shards"] = many(kMaxFolderFiles + 1, json::object());
  EXPECT_STATUS(parse(j), ErrorCode::kResourceLimit, "'shards'", "Max_Folder_Files");
  j = valid_json();
  j["folder_files"] = many(kMaxFolderFiles + 1, json::object());
  EXPECT_STATUS(parse(j), ErrorCode::kResourceLimit, "'folder_files'", "Max_Folder_Files");
  std::string text = R"({"spec_version":"1.0","encoder":"","groups":[],"tensors":{)";
  for (size_t i = 0; i <= kMaxRawTensors; ++i) {
    if (i) text += ',';
    text += '"' + std::to_string(i) + "\":0";
  }
  text += "}}";
  EXPECT_STATUS(parse_df11_metadata(text, kFile).status(), ErrorCode::kResourceLimit,
                "Max_Raw_Tensors");
}

TEST(Df11Metadata, SerializeRejectsInvalidUtf8) {
  Df11Metadata m = valid_metadata();
  m.side_files[0].content = "\xff\xfe";
  m.side_files[0].size = 2;
  EXPECT_STATUS(serialize_df11_metadata(m).status(), ErrorCode::kInvalidArgument, "UTF-8");
}

TEST(Df11Metadata, ReadFromHeader) {
  Result<std::string> text = serialize_df11_metadata(valid_metadata());
  ASSERT_TRUE(text.is_ok());
  const MetadataEntries entries = {{"format", "pt"}, {"df11", *text}};
  Result<std::vector<uint8_t>> file = serialize_safetensors({}, &entries);
  ASSERT_TRUE(file.is_ok());
  Result<SafetensorsHeader> h = parse_safetensors(*file, kFile);
  ASSERT_TRUE(h.is_ok());
  Result<std::optional<Df11Metadata>> m = read_df11_metadata(*h);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  ASSERT_TRUE(m->has_value());
  EXPECT_EQ((*m)->groups.size(), 2u);

  file = serialize_safetensors({}, nullptr);
  h = parse_safetensors(*file, kFile);
  m = read_df11_metadata(*h);
  ASSERT_TRUE(m.is_ok());
  EXPECT_FALSE(m->has_value());

  const MetadataEntries bad = {{"df11", "{}"}};
  file = serialize_safetensors({}, &bad);
  h = parse_safetensors(*file, kFile);
  EXPECT_STATUS(read_df11_metadata(*h).status(), ErrorCode::kBadMetadata, kFile.c_str(),
                "missing field 'spec_version'");
}

TEST(Df11Metadata, SafeFileNames) {
  EXPECT_TRUE(is_safe_file_name("model.safetensors"));
  EXPECT_TRUE(is_safe_file_name("..."));  // an odd but harmless name
  EXPECT_FALSE(is_safe_file_name(std::string_view("a\0b", 3)));
  EXPECT_FALSE(is_safe_file_name("a/"));
}

TEST(Df11Metadata, SafeRelativePaths) {
  EXPECT_TRUE(is_safe_relative_path("tokenizer.json"));
  EXPECT_TRUE(is_safe_relative_path("original/params.json"));
  EXPECT_TRUE(is_safe_relative_path(".gitattributes"));
  EXPECT_FALSE(is_safe_relative_path(std::string(kMaxFolderPathBytes + 1, 'a')));
  EXPECT_FALSE(is_safe_relative_path("a/" + std::string(kMaxFileNameBytes + 1, 'b')));
  EXPECT_FALSE(is_safe_relative_path(std::string_view("a/\0", 3)));
}

}  // namespace
}  // namespace df11
