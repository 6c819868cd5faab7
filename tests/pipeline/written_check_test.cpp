// compress's self-check (check_written_folder): a folder with the structure verify rejects
// is refused before it is renamed into place. The broken folders here are the ones a buggy
// writer made: the header-only shard that no index names, a source recorded nowhere.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "cli_fixture.h"
#include "df11/header_checksum.h"
#include "folder_structure.h"

namespace df11::clitest {
namespace {

constexpr const char* k1 = "model-00001-of-00003.safetensors";
constexpr const char* k2 = "model-00002-of-00003.safetensors";
constexpr const char* k3 = "model-00003-of-00003.safetensors";

// Rewrites DF11 shard `path` (or writes a header-only one when `tensors_from` is empty) with
// `meta` as its df11 metadata and its header checksum stamped: what a writer that got the
// layout wrong would have written.
void write_df11_shard(const fs::path& path, const fs::path& tensors_from,
                      const Df11Metadata& meta) {
  std::vector<std::vector<uint8_t>> data;
  SafetensorsLayout layout;
  MetadataEntries entries{{"format", "pt"}};
  if (!tensors_from.empty()) {
    auto file = SafetensorsFile::open(tensors_from.string());
    ASSERT_TRUE(file.is_ok()) << file.status().to_string();
    for (const TensorInfo& t : file->header().tensors) {
      const auto bytes = file->tensor_bytes(t);
      data.emplace_back(bytes.begin(), bytes.end());
      ASSERT_TRUE(layout.add_tensor(t.name, t.dtype, t.shape, t.byte_size()).is_ok());
    }
  }
  auto text = serialize_df11_metadata(meta);
  ASSERT_TRUE(text.is_ok()) << text.status().to_string();
  entries.emplace_back("df11", *text);
  entries.emplace_back("df11_header_xxh3", std::string(kHeaderChecksumPlaceholder));
  ASSERT_TRUE(layout.set_metadata(entries).is_ok());
  auto finalized = layout.finalize();
  ASSERT_TRUE(finalized.is_ok()) << finalized.status().to_string();
  ASSERT_TRUE(stamp_header_checksum(*finalized).is_ok());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(finalized->prefix.data()),
            static_cast<std::streamsize>(finalized->prefix.size()));
  for (const auto& bytes : data) {
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
}

class WrittenCheck : public PipelineFixture {
 protected:
  // A model whose second shard holds only the tail of layer 0: compress records that shard's
  // original in the first DF11 shard and writes no second shard.
  void SetUp() override {
    PipelineFixture::SetUp();
    SyntheticCheckpoint c;
    c.config_json = R"({"architectures": ["LlamaForCausalLM"], "tie_word_embeddings": false})";
    const std::string p = "model.layers.0.";
    c.tensors = {{"model.embed_tokens.weight", {64, 32}},
                 {p + "self_attn.q_proj.weight", {32, 32}},
                 {p + "self_attn.k_proj.weight", {32, 32}},
                 {p + "self_attn.v_proj.weight", {32, 32}},
                 {p + "self_attn.o_proj.weight", {32, 32}},
                 {"model.norm.weight", {32}},
                 {"lm_head.weight", {64, 32}}};
    c.shard_tensors = {3, 2, 2};
    write_checkpoint(model(), c);
    const Captured out = compress();
    ASSERT_EQ(out.code, 0) << out.err;
    ASSERT_FALSE(fs::exists(df11() / k2));
  }

  std::string self_check() const {
    const Status s = app::check_written_folder(df11(), app::CancelToken::never());
    if (s.is_ok()) return "";
    EXPECT_EQ(s.code(), ErrorCode::kInternal) << s.to_string();
    EXPECT_NE(s.message().find(df11().string() +
                               ": compress wrote a folder that df11 verify would reject"),
              std::string::npos)
        << s.message();
    return s.message();
  }
};

TEST_F(WrittenCheck, PassesWhatCompressWrote) { EXPECT_EQ(self_check(), ""); }

TEST_F(WrittenCheck, CompressRunsIt) {
  CompressOptions o = compress_options();
  o.out_dir = tmp_ / "again";
  std::ostringstream out, err;
  ASSERT_EQ(app::run_compress_command(o, {.verbosity = 2}, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("checked the structure of what was written in "), std::string::npos)
      << out.str();
}

TEST_F(WrittenCheck, RefusesTheHeaderOnlyShardOfTheOldLayout) {
  // As compress wrote it before: the second original's record in a header-only shard of its
  // own, which the index does not name.
  Df11Metadata first = metadata_of(df11() / k1);
  ASSERT_EQ(first.sources.size(), 2u);
  Df11Metadata second;
  second.spec_version = first.spec_version;
  second.encoder = first.encoder;
  second.sources.push_back(first.sources[1]);
  first.sources.pop_back();
  first.shards = std::vector<std::string>{k1, k2, k3};
  const fs::path copy = tmp_ / "first.safetensors";
  fs::copy_file(df11() / k1, copy);
  write_df11_shard(df11() / k1, copy, first);
  write_df11_shard(df11() / k2, {}, second);
  const std::string why = self_check();
  EXPECT_NE(why.find("listed in the metadata but in no source file's header"), std::string::npos)
      << why;
  EXPECT_NE(why.find(std::string(k2) + ": a shard of this folder"), std::string::npos) << why;
  // verify agrees.
  const Captured v = verify();
  EXPECT_EQ(v.code, 1) << v.out << v.err;
}

TEST_F(WrittenCheck, RefusesAnOriginalRecordedNowhere) {
  Df11Metadata first = metadata_of(df11() / k1);
  first.sources.pop_back();
  const fs::path copy = tmp_ / "first.safetensors";
  fs::copy_file(df11() / k1, copy);
  write_df11_shard(df11() / k1, copy, first);
  const std::string why = self_check();
  EXPECT_NE(why.find("group 'model.layers.0': member 'model.layers.0.self_attn.o_proj.weight': "
                     "listed in the metadata but in no source file's header"),
            std::string::npos)
      << why;
}

TEST_F(WrittenCheck, RefusesAFileOfAnotherSize) {
  write_text(df11() / "config.json", read_text(df11() / "config.json") + " ");
  const std::string why = self_check();
  EXPECT_NE(why.find("config.json: "), std::string::npos) << why;
}

TEST_F(WrittenCheck, RefusesAShardTheIndexDoesNotName) {
  write_df11_shard(df11() / "extra.safetensors", {}, metadata_of(df11() / k3));
  const std::string why = self_check();
  EXPECT_NE(why.find("extra.safetensors: not in the folder record"), std::string::npos) << why;
}

}  // namespace
}  // namespace df11::clitest
