// verify catches every corruption of a DF11 folder and names what is wrong; folders without
// df11 metadata (as the dfloat11 tools publish them) are validated and fully decoded.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_fixture.h"
#include "tools_checkpoint.h"
#include "tools_inspect_run.h"

namespace df11::clitest {
namespace {

class Corruption : public PipelineFixture {
 protected:
  void SetUp() override {
    PipelineFixture::SetUp();
    write_tiny_llama(model(), {});
    ASSERT_EQ(compress().code, 0);
  }
  // Replaces the fixture's model and its DF11 folder with variant `m`, compressed.
  void recompress_as(const TinyLlama& m) {
    fs::remove_all(model());
    fs::remove_all(df11());
    write_tiny_llama(model(), m);
    ASSERT_EQ(compress().code, 0);
  }
  // Flips one byte, verifies, flips it back.
  Captured verify_flipped(const fs::path& file, uint64_t offset, uint8_t mask = 0x01,
                          bool against = false) {
    flip_byte(file, offset, mask);
    Captured v = verify(against ? std::optional<fs::path>(model()) : std::nullopt);
    flip_byte(file, offset, mask);
    return v;
  }
  void expect_fails_naming(const Captured& v, const std::vector<std::string>& names) {
    EXPECT_EQ(v.code, 1) << v.out << v.err;
    EXPECT_NE(v.out.find("FAIL "), std::string::npos) << v.out;
    EXPECT_NE(v.err.find("verification failed"), std::string::npos) << v.err;
    for (const std::string& name : names) {
      EXPECT_NE(v.out.find(name), std::string::npos) << "'" << name << "' not named in:\n" << v.out;
    }
  }
};

TEST_F(Corruption, IntactFolderVerifies) {
  const Captured v = verify(model());
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  EXPECT_EQ(v.out.find("FAIL"), std::string::npos) << v.out;
}

// push's digests: every shard and recorded file once, as the bytes on disk hash, then the
// end marker once, before verify returns; the report lists the same digests.
TEST_F(Corruption, FolderDigestsAreHandedOnAsComputed) {
  app::VerifyOptions options;
  options.df11_dir = df11();
  options.device = app::DeviceChoice::kCpu;
  options.folder_sha256 = true;
  std::mutex mutex;
  std::map<std::string, std::string> handed;
  int ends = 0;
  bool digest_after_end = false;
  options.on_folder_digest = [&](const FolderFile* f) {
    std::lock_guard<std::mutex> lock(mutex);
    if (f == nullptr) {
      ++ends;
      return;
    }
    digest_after_end = digest_after_end || ends > 0;
    EXPECT_TRUE(handed.emplace(f->file, f->sha256).second) << f->file << " handed on twice";
  };
  auto report = app::verify_model(options, app::null_reporter(), app::CancelToken::never());
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  EXPECT_TRUE(report->ok());
  EXPECT_EQ(ends, 1);
  EXPECT_FALSE(digest_after_end);
  const auto on_disk = tree_sha256(df11());
  std::map<std::string, std::string> expected;
  for (const auto& [file, sha] : on_disk) {
    if (file.ends_with(".safetensors") || file == "config.json") expected[file] = sha;
  }
  ASSERT_GE(expected.size(), 3u);  // two shards and config.json at least
  for (const auto& [file, sha] : expected) {
    ASSERT_EQ(handed.count(file), 1u) << file << " not handed on";
    EXPECT_EQ(handed[file], sha) << file;
  }
  for (const auto& [file, sha] : handed) EXPECT_EQ(on_disk.at(file), sha) << file;
  std::map<std::string, std::string> listed;
  for (const FolderFile& f : report->folder_digests) listed[f.file] = f.sha256;
  EXPECT_EQ(listed, handed);
}

// push stops its verify pass alone (an upload failed) through a child token; SIGINT on the
// parent stops both, and the child reports the parent's reason.
TEST(CancelToken, ChildStopsWithItsParentAndAlone) {
  app::CancelToken parent;
  app::CancelToken child(&parent);
  EXPECT_FALSE(child.cancelled());
  EXPECT_TRUE(child.check().is_ok());
  parent.cancel("SIGINT");
  EXPECT_TRUE(child.cancelled());
  EXPECT_EQ(child.check().message(), "interrupted by SIGINT");
  parent.reset();
  EXPECT_FALSE(child.cancelled());
  child.cancel("the push stopping");
  EXPECT_FALSE(parent.cancelled());
  EXPECT_EQ(child.check().message(), "interrupted by the push stopping");
  // Both: the parent's reason is the cause (compress's shards stop each other through a
  // child token after the caller's progress callback cancelled the parent).
  parent.cancel("the progress callback");
  EXPECT_EQ(child.check().message(), "interrupted by the progress callback");
  parent.reset();
  child.reset();

  TempDir tmp;
  write_tiny_llama(tmp / "model", {});
  app::VerifyOptions options;
  options.df11_dir = tmp / "model";
  options.device = app::DeviceChoice::kCpu;
  app::CancelToken stopped_by_parent(&parent);
  parent.cancel("SIGTERM");
  const auto report = app::verify_model(options, app::null_reporter(), stopped_by_parent);
  ASSERT_FALSE(report.is_ok());
  EXPECT_EQ(report.status().code(), ErrorCode::kInterrupted);
  EXPECT_EQ(report.status().message(), "interrupted by SIGTERM");
}

TEST_F(Corruption, CodedTensorBytesAreNamed) {
  struct Case {
    const char* shard;
    const char* tensor;
    uint64_t at;
    const char* member;  // a member named in the report
  };
  const Case cases[] = {
      {kShard1, "model.layers.0.sign_mantissa", 100, "model.layers.0.self_attn.q_proj.weight"},
      {kShard2, "lm_head.encoded_exponent", 50, "lm_head.weight"},
      {kShard1, "model.layers.1.gaps", 3, "model.layers.1.mlp.down_proj.weight"},
      {kShard1, "model.embed_tokens.luts", 7, "model.embed_tokens.weight"},
      {kShard1, "model.layers.0.output_positions", 4, "model.layers.0.mlp.up_proj.weight"},
      {kShard2, "model.layers.2.split_positions", 8, "model.layers.2.self_attn.k_proj.weight"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.tensor);
    const uint64_t offset = tensor_file_offset(df11() / c.shard, c.tensor) + c.at;
    expect_fails_naming(verify_flipped(df11() / c.shard, offset), {c.tensor, c.member});
  }
}

TEST_F(Corruption, RawTensorBytesAreNamed) {
  for (const auto& [shard, tensor] :
       {std::pair{kShard1, "model.layers.0.input_layernorm.weight"},
        std::pair{kShard2, "model.rotary_emb.inv_freq"}, std::pair{kShard2, "model.norm.weight"}}) {
    SCOPED_TRACE(tensor);
    const uint64_t offset = tensor_file_offset(df11() / shard, tensor) + 5;
    expect_fails_naming(verify_flipped(df11() / shard, offset), {tensor});
    expect_fails_naming(verify_flipped(df11() / shard, offset, 0x01, /*against=*/true), {tensor});
  }
}

// Position of the first hex digit of the xxh3 recorded after `name` in the df11 metadata.
uint64_t recorded_xxh3_offset(const fs::path& shard, const std::string& name) {
  const std::string text = read_text(shard);
  const size_t at = text.find("xxh3", text.find("\\\"" + name + "\\\""));
  EXPECT_NE(at, std::string::npos) << name;
  return text.find_first_of("0123456789abcdef", at + 4);
}

TEST_F(Corruption, MetadataChecksumsAreNamed) {
  for (const auto& [shard, tensor] :
       {std::pair{kShard2, "model.layers.2.mlp.up_proj.weight"},
        std::pair{kShard2, "model.norm.weight"}, std::pair{kShard1, "model.embed_tokens.weight"}}) {
    SCOPED_TRACE(tensor);
    const uint64_t offset = recorded_xxh3_offset(df11() / shard, tensor);
    // Another hex digit: the metadata stays well-formed, only the checksum is wrong.
    const char digit = read_text(df11() / shard)[offset];
    const uint8_t mask = static_cast<uint8_t>(digit ^ (digit == '0' ? '1' : '0'));
    expect_fails_naming(verify_flipped(df11() / shard, offset, mask), {tensor});
  }
}

// Every byte of the data region is covered by some checksum: flip one every few hundred.
TEST_F(Corruption, EveryDataByteIsCovered) {
  for (const char* shard : {kShard1, kShard2}) {
    uint64_t start = 0, size = 0;
    {
      auto file = SafetensorsFile::open((df11() / shard).string());
      ASSERT_TRUE(file.is_ok());
      start = file->header().data_start;
      size = file->header().file_size;
    }
    for (uint64_t offset = start; offset < size; offset += 397) {
      const Captured v = verify_flipped(df11() / shard, offset, 0x10);
      ASSERT_EQ(v.code, 1) << shard << " offset " << offset << "\n" << v.out << v.err;
    }
  }
}

// Header bytes too: the length prefix, the header JSON, the df11 metadata in it, the
// recorded original headers and side files, the informational "encoder" string, the
// spec_version digits, the padding: the whole-header checksum leaves no byte out.
TEST_F(Corruption, HeaderBytesAreCovered) {
  for (const char* shard : {kShard1, kShard2}) {
    uint64_t data_start = 0;
    {
      auto file = SafetensorsFile::open((df11() / shard).string());
      ASSERT_TRUE(file.is_ok());
      data_start = file->header().data_start;
    }
    int checked = 0;
    for (uint64_t offset = 0; offset < data_start; offset += 11) {
      const Captured v = verify_flipped(df11() / shard, offset);
      ASSERT_EQ(v.code, 1) << shard << " offset " << offset << "\n" << v.out << v.err;
      ++checked;
    }
    EXPECT_GT(checked, 100);
  }
}

// The header fields no per-tensor checksum covers, each flipped by one bit: reported by the
// whole-header checksum (spec 5.2), with what the changed field then breaks.
TEST_F(Corruption, HeaderChecksumNamesTheShard) {
  const fs::path shard = df11() / kShard1;
  const std::string text = read_text(shard);
  struct Case {
    const char* what;
    uint64_t offset;
    uint8_t mask;
    std::vector<std::string> expect;  // in stdout + stderr
  };
  const uint64_t key = text.find("\"df11\":\"");
  const uint64_t checksum_key = text.find("\"df11_header_xxh3\"");
  const uint64_t checksum_value = checksum_key + std::string("\"df11_header_xxh3\":\"").size();
  const uint64_t encoder = text.find("df11 ", text.find("\\\"encoder\\\""));
  const uint64_t minor = text.find("\\\"spec_version\\\":\\\"1.3") + 21;
  const uint64_t format = text.find("\"format\":\"pt\"") + 10;
  ASSERT_EQ(text[minor], '3');
  ASSERT_EQ(text[format], 'p');
  const std::string mismatch = std::string(kShard1) + ": header checksum mismatch";
  const Case cases[] = {
      // "df11" -> "tf11": the shard seems to have no df11 metadata.
      {"df11 key", key + 1, 0x10, {mismatch, "written by df11 but has no df11 metadata"}},
      {"encoder", encoder + 2, 0x01, {mismatch}},
      {"spec_version minor", minor, 0x01, {mismatch}},
      {"format: pt", format, 0x01, {mismatch, "__metadata__ entries differ"}},
      {"checksum key", checksum_key + 5, 0x01, {"without the header checksum"}},
      {"checksum value", checksum_value + 3, 0x01, {kShard1}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const Captured v = verify_flipped(shard, c.offset, c.mask);
    EXPECT_EQ(v.code, 1) << v.out << v.err;
    for (const std::string& e : c.expect) {
      EXPECT_NE((v.out + v.err).find(e), std::string::npos) << "'" << e << "' in:\n"
                                                            << v.out << v.err;
    }
  }
  // Padding spaces: no single-bit flip of a space is JSON whitespace.
  uint64_t data_start = 0;
  {
    auto file = SafetensorsFile::open(shard.string());
    ASSERT_TRUE(file.is_ok());
    data_start = file->header().data_start;
  }
  for (uint64_t offset = data_start - 1; text[offset] == ' '; --offset) {
    for (int bit = 0; bit < 8; ++bit) {
      const Captured v = verify_flipped(shard, offset, static_cast<uint8_t>(1u << bit));
      EXPECT_EQ(v.code, 1) << "padding byte " << offset << " bit " << bit << v.out << v.err;
    }
  }
}

// spec 7.7: every file besides the shards is in the folder record (size and SHA-256).
TEST_F(Corruption, EveryFolderFileIsCovered) {
  for (const char* rel : {"config.json", "model.safetensors.index.json", "tokenizer.json",
                          "generation_config.json", "extra/README.md"}) {
    SCOPED_TRACE(rel);
    const fs::path file = df11() / rel;
    const uint64_t size = fs::file_size(file);
    for (const uint64_t offset : {uint64_t{0}, size / 2, size - 2}) {
      const Captured v = verify_flipped(file, offset, 0x04);
      // 3 (not_found) when a flip renames a shard the index names.
      EXPECT_TRUE(v.code == 1 || v.code == 3) << "offset " << offset << "\n" << v.out << v.err;
      EXPECT_NE((v.out + v.err).find(rel), std::string::npos) << v.out << v.err;
    }
  }
  // A change that keeps the JSON valid is found by the record alone.
  const fs::path tokenizer = df11() / "tokenizer.json";
  const uint64_t at = find_in_file(tokenizer, "BPE");
  expect_fails_naming(verify_flipped(tokenizer, at, 0x20),
                      {"tokenizer.json: ", "bytes with sha256", "the folder record has"});
}

TEST_F(Corruption, MissingAndUnrecordedFiles) {
  const std::string tokenizer = read_text(df11() / "tokenizer.json");
  fs::remove(df11() / "tokenizer.json");
  expect_fails_naming(verify(), {"tokenizer.json: recorded in the folder record, but missing"});
  write_text(df11() / "tokenizer.json", tokenizer);

  // An unknown file is only a warning (a README added later), ...
  write_text(df11() / "extra" / "notes.txt", "hello\n");
  Captured v = verify();
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  EXPECT_NE(v.err.find("warning: extra/notes.txt: not in the folder record"), std::string::npos)
      << v.err;
  fs::remove(df11() / "extra" / "notes.txt");

  // ... but the loader would load an unknown top-level *.safetensors.
  fs::copy_file(df11() / kShard2, df11() / "stray.safetensors");
  expect_fails_naming(verify(), {"stray.safetensors: not in the folder record"});
  fs::remove(df11() / "stray.safetensors");
  EXPECT_EQ(verify().code, 0);
}

// spec 7.2: config.json's marker and the shards' df11 metadata go together.
TEST_F(Corruption, Df11MarkerIsRequired) {
  const std::string original = read_text(df11() / "config.json");
  nlohmann::ordered_json config = read_json(df11() / "config.json");
  config["dfloat11_config"].erase("df11");
  write_text(df11() / "config.json", config.dump(2) + "\n");
  expect_fails_naming(verify(), {"config.json: dfloat11_config has no \"df11\" marker",
                                 "config.json: ", "the folder record has"});
  config["dfloat11_config"]["df11"] = {{"spec_version", "1.9"}};
  write_text(df11() / "config.json", config.dump(2) + "\n");
  expect_fails_naming(verify(), {"dfloat11_config.df11 says spec_version 1.9"});
  write_text(df11() / "config.json", original);
  EXPECT_EQ(verify().code, 0);
}

// One shard whose "df11" key is renamed: without the marker rule this folder would be taken
// for a published one and verified without checksums.
TEST_F(Corruption, RenamedDf11KeyInASingleShardFolder) {
  TinyLlama single;
  single.sharded = false;
  recompress_as(single);
  const fs::path shard = df11() / "model.safetensors";
  const uint64_t key = find_in_file(shard, "\"df11\":\"") + 1;
  const Captured v = verify_flipped(shard, key, 0x10);  // "tf11"
  EXPECT_EQ(v.code, 1) << v.out << v.err;
  EXPECT_NE(v.err.find("model.safetensors: written by df11 but has no df11 metadata"),
            std::string::npos)
      << v.err;
  flip_byte(shard, key, 0x10);
  const Captured d = decompress();
  EXPECT_EQ(d.code, 1) << d.err;
  EXPECT_NE(d.err.find("written by df11 but has no df11 metadata"), std::string::npos) << d.err;
  flip_byte(shard, key, 0x10);
}

// A folder written with df11 metadata 1.0 (no header checksums, folder record or marker)
// Rewrites a shard as df11 metadata 1.0 wrote it (no header checksum, no folder record),
// after `edit` changes its metadata.
void rewrite_as_version_10(const fs::path& path,
                           const std::function<void(Df11Metadata&)>& edit = {}) {
  std::vector<std::vector<uint8_t>> data;
  std::vector<TensorData> tensors;
  MetadataEntries entries;
  {
    auto file = SafetensorsFile::open(path.string());
    ASSERT_TRUE(file.is_ok());
    for (const TensorInfo& t : file->header().tensors) {
      const auto bytes = file->tensor_bytes(t);
      data.emplace_back(bytes.begin(), bytes.end());
    }
    for (size_t i = 0; i < file->header().tensors.size(); ++i) {
      const TensorInfo& t = file->header().tensors[i];
      tensors.push_back({t.name, t.dtype, t.shape, data[i]});
    }
    Df11Metadata meta = metadata_of(path);
    meta.spec_version = "1.0";
    meta.shards.reset();
    meta.folder_files.reset();
    if (edit) edit(meta);
    auto text = serialize_df11_metadata(meta);
    ASSERT_TRUE(text.is_ok());
    for (const auto& entry : file->header().metadata) {
      if (entry.first != "df11" && entry.first != "df11_header_xxh3") entries.push_back(entry);
    }
    entries.emplace_back("df11", *text);
  }
  ASSERT_TRUE(write_safetensors(path.string(), tensors, &entries).is_ok());
}

// still verifies; verify says what it could not cover.
TEST_F(Corruption, Version10FoldersStillVerify) {
  for (const char* name : {kShard1, kShard2}) rewrite_as_version_10(df11() / name);
  nlohmann::ordered_json config = read_json(df11() / "config.json");
  config["dfloat11_config"].erase("df11");
  write_text(df11() / "config.json", config.dump(2) + "\n");
  const Captured v = verify();
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  EXPECT_NE(v.err.find("note: df11 metadata 1.0: no folder record and no header checksums"),
            std::string::npos)
      << v.err;
  EXPECT_NE(v.out.find("0 header checksums, 0 folder files"), std::string::npos) << v.out;
  // The per-tensor checksums still hold.
  const uint64_t offset =
      tensor_file_offset(df11() / kShard1, "model.layers.0.sign_mantissa") + 100;
  expect_fails_naming(verify_flipped(df11() / kShard1, offset),
                      {"model.layers.0.self_attn.q_proj.weight"});
}

// A recorded file SHA-256 is checked with --sha256 only (spec 7.6): without a header
// checksum (metadata 1.0) a wrong one is invisible to the other checks.
TEST_F(Corruption, RecordedFileSha256IsCheckedWithSha256) {
  CompressOptions with_sha = compress_options();
  with_sha.source_sha256 = true;
  with_sha.force = true;
  ASSERT_EQ(compress(with_sha).code, 0);
  for (const char* name : {kShard1, kShard2}) {
    rewrite_as_version_10(df11() / name, [&](Df11Metadata& meta) {
      if (name == std::string(kShard1)) meta.sources.front().sha256.assign(64, '0');
    });
  }
  nlohmann::ordered_json config = read_json(df11() / "config.json");
  config["dfloat11_config"].erase("df11");
  write_text(df11() / "config.json", config.dump(2) + "\n");
  EXPECT_EQ(verify().code, 0);
  const Captured d = decompress();
  EXPECT_EQ(d.code, 0) << d.err;
  EXPECT_NE(d.out.find("xxh3 checked"), std::string::npos) << d.out;
  EXPECT_EQ(tree_sha256(restored()), tree_sha256(model()));

  VerifyOptions v;
  v.df11_dir = df11();
  v.device = app::DeviceChoice::kCpu;
  v.file_sha256 = true;
  std::ostringstream vout, verr;
  EXPECT_EQ(app::run_verify_command(v, {}, vout, verr), 1);
  EXPECT_NE(vout.str().find(std::string(kShard1) + ": rebuilt file has sha256 "), std::string::npos)
      << vout.str() << verr.str();

  DecompressOptions o;
  o.df11_dir = df11();
  o.out_dir = tmp_ / "restored2";
  o.file_sha256 = true;
  std::ostringstream out, err;
  EXPECT_EQ(app::run_decompress_command(o, {}, out, err), 1);
  EXPECT_NE(err.str().find(std::string(kShard1) + ": rebuilt file has sha256 "), std::string::npos)
      << err.str();
  EXPECT_FALSE(fs::exists(tmp_ / "restored2"));
}

TEST_F(Corruption, DecompressRefusesCorruptFolderFiles) {
  flip_byte(df11() / "tokenizer.json", 3, 0x01);
  const Captured d = decompress();
  EXPECT_EQ(d.code, 1) << d.err;
  EXPECT_NE(d.err.find("tokenizer.json: "), std::string::npos) << d.err;
  EXPECT_NE(d.err.find("[corrupt_data]"), std::string::npos) << d.err;
  EXPECT_EQ(list_dir(tmp_.path()), (std::vector<std::string>{"df11", "model"}));
  flip_byte(df11() / "tokenizer.json", 3, 0x01);
  // spec_version "1.3" -> "1.2" in the second shard: only its header checksum can tell.
  const uint64_t minor = find_in_file(df11() / kShard2, "spec_version\\\":\\\"1.3") + 18;
  flip_byte(df11() / kShard2, minor, 0x01);
  const Captured h = decompress();
  EXPECT_EQ(h.code, 1) << h.err;
  EXPECT_NE(h.err.find(std::string(kShard2) + ": header checksum mismatch"), std::string::npos)
      << h.err;
}

TEST_F(Corruption, AgainstFolderWithMoreTensorsFails) {
  // The same model with lm_head (the tied variant lacks it; every other tensor is equal).
  const fs::path untied = tmp_ / "untied";
  write_tiny_llama(untied, {});
  TinyLlama tied;
  tied.tied_embeddings = true;
  recompress_as(tied);
  EXPECT_EQ(verify(model()).code, 0);
  const Captured v = verify(untied);
  EXPECT_EQ(v.code, 1) << v.out;
  EXPECT_NE(v.out.find("FAIL tensor 'lm_head.weight' of " + untied.string() +
                       " is missing from the DF11 folder"),
            std::string::npos)
      << v.out;
}

TEST_F(Corruption, DecompressRefusesCorruptData) {
  const uint64_t offset =
      tensor_file_offset(df11() / kShard1, "model.layers.0.sign_mantissa") + 100;
  flip_byte(df11() / kShard1, offset, 0x01);
  const Captured d = decompress();
  EXPECT_EQ(d.code, 1) << d.err;
  EXPECT_NE(d.err.find("model.layers.0.self_attn.q_proj.weight"), std::string::npos) << d.err;
  EXPECT_NE(d.err.find("xxh3"), std::string::npos) << d.err;
  EXPECT_EQ(list_dir(tmp_.path()), (std::vector<std::string>{"df11", "model"}));
}

// A DF11 folder as the dfloat11 tools publish it: the same tensors, no df11 metadata, no df11
// marker in config.json.
void strip_metadata(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  for (const auto& entry : fs::directory_iterator(from)) {
    const fs::path name = entry.path().filename();
    if (name == "config.json") {
      nlohmann::ordered_json config = read_json(entry.path());
      ASSERT_EQ(config["dfloat11_config"].erase("df11"), 1u);
      write_text(to / name, config.dump(2));
      continue;
    }
    if (entry.path().extension() != ".safetensors") {
      fs::copy(entry.path(), to / name, fs::copy_options::recursive);
      continue;
    }
    auto file = SafetensorsFile::open(entry.path().string());
    ASSERT_TRUE(file.is_ok());
    std::vector<TensorData> tensors;
    for (const TensorInfo& t : file->header().tensors) {
      tensors.push_back({t.name, t.dtype, t.shape, file->tensor_bytes(t)});
    }
    const MetadataEntries metadata{{"format", "pt"}};
    ASSERT_TRUE(write_safetensors((to / name).string(), tensors, &metadata).is_ok());
  }
}

// Tensor `name` of the published folder `dir` taken out of shard `from` (`keep`: left there
// too) and added to shard `to` (none: dropped), the index following, as transformers'
// save_pretrained may split a group's stored tensors across shards.
void move_tensor(const fs::path& dir, const std::string& name, const std::string& from,
                 const std::string& to, bool keep = false) {
  const auto read = [](const fs::path& file) {
    auto opened = SafetensorsFile::open(file.string());
    EXPECT_TRUE(opened.is_ok()) << opened.status().to_string();
    std::vector<test::ToolsTensor> tensors;
    for (const TensorInfo& t : opened->header().tensors) {
      const auto bytes = opened->tensor_bytes(t);
      tensors.push_back({t.name, t.dtype, t.shape, {bytes.begin(), bytes.end()}});
    }
    return tensors;
  };
  std::vector<test::ToolsTensor> source = read(dir / from);
  const auto it = std::find_if(source.begin(), source.end(),
                               [&](const test::ToolsTensor& t) { return t.name == name; });
  ASSERT_NE(it, source.end()) << name;
  const test::ToolsTensor moved = *it;
  if (!keep) {
    source.erase(it);
    test::write_tools_safetensors((dir / from).string(), source);
  }
  nlohmann::ordered_json index = read_json(dir / app::kIndexFile);
  if (to.empty()) {
    index["weight_map"].erase(name);
  } else {
    std::vector<test::ToolsTensor> target = read(dir / to);
    target.push_back(moved);
    test::write_tools_safetensors((dir / to).string(), target);
    if (!keep) index["weight_map"][name] = to;
  }
  write_text(dir / app::kIndexFile, index.dump(2));
}

class Published : public Corruption {
 protected:
  void SetUp() override {
    Corruption::SetUp();
    strip_metadata(df11(), published());
  }
  fs::path published() const { return tmp_ / "published"; }
  // decompress --like the original: the shapes come from its tensors.
  Captured restore_like_model() const {
    DecompressOptions o;
    o.df11_dir = published();
    o.out_dir = restored();
    o.like = model();
    std::ostringstream out, err;
    const int code = app::run_decompress_command(o, {}, out, err);
    return {code, out.str(), err.str()};
  }
};

TEST_F(Published, ValidatedAndDecodedWithoutChecksums) {
  const Captured v = verify(std::nullopt, published());
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("checksums unavailable"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("5 groups decoded"), std::string::npos) << v.out;
  const Captured va = verify(model(), published());
  EXPECT_EQ(va.code, 0) << va.out << va.err;
  EXPECT_NE(va.out.find("compared bit for bit"), std::string::npos) << va.out;
}

TEST_F(Published, BadGapFailsAndWrongWeightsFailAgainstTheOriginal) {
  const fs::path shard = published() / kShard1;
  const uint64_t gaps = tensor_file_offset(shard, "model.layers.0.gaps");
  flip_byte(shard, gaps, 0x80);  // window 0's gap: 0 -> 16
  const Captured v = verify(std::nullopt, published());
  EXPECT_EQ(v.code, 1) << v.out << v.err;
  EXPECT_NE(v.out.find("model.layers.0"), std::string::npos) << v.out;
  flip_byte(shard, gaps, 0x80);

  // A sign bit flipped decodes fine; only the comparison with the original can tell.
  const uint64_t sign = tensor_file_offset(shard, "model.layers.0.sign_mantissa");
  flip_byte(shard, sign + 2, 0x80);
  EXPECT_EQ(verify(std::nullopt, published()).code, 0);
  const Captured va = verify(model(), published());
  EXPECT_EQ(va.code, 1) << va.out << va.err;
  EXPECT_NE(va.out.find("model.layers.0.self_attn.q_proj.weight"), std::string::npos) << va.out;
  EXPECT_NE(va.out.find("1 of 4096 elements differ"), std::string::npos) << va.out;
}

TEST_F(Published, TiedHeadIsComparedWithTheEmbeddingItCopies) {
  // The official encoder codes a tied lm_head as its own group; the original has no
  // lm_head.weight, so --against compares the group with the embedding (spec 7.4).
  TinyLlama tied;
  tied.tied_embeddings = true;
  recompress_as(tied);
  fs::remove_all(published());
  strip_metadata(df11(), published());
  const Captured va = verify(model(), published());
  EXPECT_EQ(va.code, 0) << va.out << va.err;
  const fs::path shard = published() / kShard1;
  flip_byte(shard, tensor_file_offset(shard, "lm_head.sign_mantissa") + 3, 0x80);
  const Captured bad = verify(model(), published());
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("model.embed_tokens.weight"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("group 'lm_head'"), std::string::npos) << bad.out;
}

// spec 7.8: a group's stored tensors in different shards (as transformers' save_pretrained
// may write them) verify, inspect and restore as when the group is in one shard.
TEST_F(Published, GroupSplitAcrossShardsReadsAsTheUnsplitFolder) {
  const nlohmann::json unsplit = test::inspect_json(published().string());
  move_tensor(published(), "model.layers.0.sign_mantissa", kShard1, kShard2);
  move_tensor(published(), "model.layers.0.gaps", kShard1, kShard2);
  move_tensor(published(), "lm_head.luts", kShard2, kShard1);
  const Captured v = verify(std::nullopt, published());
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("5 groups decoded"), std::string::npos) << v.out;
  const Captured va = verify(model(), published());
  EXPECT_EQ(va.code, 0) << va.out << va.err;
  EXPECT_NE(va.out.find("compared bit for bit"), std::string::npos) << va.out;

  const nlohmann::json split = test::inspect_json(published().string());
  EXPECT_EQ(split.at("groups"), unsplit.at("groups"));
  EXPECT_EQ(split.at("raw_tensors"), unsplit.at("raw_tensors"));

  const Captured d = restore_like_model();
  ASSERT_EQ(d.code, 0) << d.err;
  expect_same_tensors(restored(), model());
}

// A group's stored tensor in no shard, or in two, is refused naming it and the folder.
TEST_F(Published, GroupTensorInNoShardOrInTwoIsRefused) {
  const auto refused = [&](const std::string& what) {
    const Captured v = verify(std::nullopt, published());
    EXPECT_EQ(v.code, 1) << v.out << v.err;
    EXPECT_NE((v.out + v.err).find(what), std::string::npos) << v.out << v.err;
    const test::InspectRun i = test::run_inspect_cmd(published().string(), false);
    EXPECT_NE(i.code, 0);
    EXPECT_NE(i.err.find(what), std::string::npos) << i.err;
    const Captured d = restore_like_model();
    EXPECT_NE(d.code, 0);
    EXPECT_NE(d.err.find(what), std::string::npos) << d.err;
    EXPECT_FALSE(fs::exists(restored()));
  };
  move_tensor(published(), "model.layers.0.gaps", kShard1, "");
  refused(published().string() +
          ": group 'model.layers.0': stored tensor 'model.layers.0.gaps' is missing");
  // Tensor names are unique across a folder's shards: opening it refuses the second copy.
  fs::remove_all(published());
  strip_metadata(df11(), published());
  move_tensor(published(), "model.layers.0.gaps", kShard1, kShard2, /*keep=*/true);
  refused(std::string(kShard2) + ": tensor 'model.layers.0.gaps' also appears in " + kShard1);
}

// spec 7.8: the tiny model's config.json lacks num_attention_heads, so no shape can be derived
// from it: decompress names the weights and asks for --like, and writes nothing.
TEST_F(Published, DecompressNamesUnknownShapesAndSuggestsLike) {
  DecompressOptions o;
  o.df11_dir = published();
  o.out_dir = restored();
  std::ostringstream out, err;
  EXPECT_EQ(app::run_decompress_command(o, {}, out, err), 3);
  EXPECT_NE(err.str().find("coded weights are unknown"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("'model.layers.0.mlp.down_proj.weight'"), std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("--like"), std::string::npos) << err.str();
  EXPECT_FALSE(fs::exists(restored()));
  o.file_sha256 = true;  // nothing recorded to check against
  EXPECT_EQ(app::run_decompress_command(o, {}, out, err), 2);
}

// With --like the original, every tensor comes back with its name, dtype, shape and bytes
// (a new checkpoint: the same tensors, not the same files); the index maps both shards.
TEST_F(Published, DecompressLikeTheOriginalRestoresEveryTensor) {
  const Captured d = restore_like_model();
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_NE(d.err.find("no df11 metadata"), std::string::npos) << d.err;
  expect_same_tensors(restored(), model());
  const nlohmann::json config = read_json(restored() / "config.json");
  EXPECT_FALSE(config.contains("dfloat11_config"));
  EXPECT_EQ(config["model_type"], "llama");
  EXPECT_TRUE(fs::exists(restored() / "model.safetensors.index.json"));
  EXPECT_EQ(read_text(restored() / "generation_config.json"),
            read_text(model() / "generation_config.json"));
  // The restored checkpoint compresses and round-trips like any other.
  const Captured va = verify(restored(), published());
  EXPECT_EQ(va.code, 0) << va.out << va.err;
}

}  // namespace
}  // namespace df11::clitest
