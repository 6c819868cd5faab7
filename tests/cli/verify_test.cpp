// verify catches every corruption of a DF11 folder and names what is wrong; folders without
// df11 metadata (as the dfloat11 tools publish them) are validated and fully decoded.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_fixture.h"

namespace df11::clitest {
namespace {

class Corruption : public PipelineFixture {
 protected:
  void SetUp() override {
    PipelineFixture::SetUp();
    write_tiny_llama(model(), {});
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

// Header bytes too: the header JSON, the df11 metadata in it, the recorded original
// headers and side files. (Not covered: the metadata's informational "encoder" string and
// the minor digit of spec_version, which a reader accepts in any 1.x.)
TEST_F(Corruption, HeaderBytesAreCovered) {
  for (const char* shard : {kShard1, kShard2}) {
    const std::string text = read_text(df11() / shard);
    uint64_t data_start = 0;
    {
      auto file = SafetensorsFile::open((df11() / shard).string());
      ASSERT_TRUE(file.is_ok());
      data_start = file->header().data_start;
    }
    auto value_range = [&](const std::string& key) {
      const size_t k = text.find(key);
      const size_t begin = text.find(':', k);
      return std::pair<size_t, size_t>{begin, text.find(',', begin)};
    };
    const auto encoder = value_range("\\\"encoder\\\"");
    const auto version = value_range("\\\"spec_version\\\"");
    int checked = 0;
    for (uint64_t offset = 0; offset < data_start; offset += 11) {
      if ((offset >= encoder.first && offset < encoder.second) ||
          (offset >= version.first && offset < version.second)) {
        continue;
      }
      const Captured v = verify_flipped(df11() / shard, offset);
      ASSERT_EQ(v.code, 1) << shard << " offset " << offset << " in '"
                           << text.substr(offset - 60, 120) << "'\n"
                           << v.out << v.err;
      ++checked;
    }
    EXPECT_GT(checked, 100);
  }
}

TEST_F(Corruption, AgainstFolderWithMoreTensorsFails) {
  // The same model with lm_head (the tied variant lacks it; every other tensor is equal).
  const fs::path untied = tmp_ / "untied";
  write_tiny_llama(untied, {});
  fs::remove_all(model());
  fs::remove_all(df11());
  TinyLlama tied;
  tied.tied_embeddings = true;
  write_tiny_llama(model(), tied);
  ASSERT_EQ(compress().code, 0);
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

// A DF11 folder as the dfloat11 tools publish it: the same tensors, no df11 metadata.
void strip_metadata(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  for (const auto& entry : fs::directory_iterator(from)) {
    const fs::path name = entry.path().filename();
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

class Published : public Corruption {
 protected:
  void SetUp() override {
    Corruption::SetUp();
    strip_metadata(df11(), published());
  }
  fs::path published() const { return tmp_ / "published"; }
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

TEST_F(Published, CannotBeDecompressed) {
  DecompressOptions o;
  o.df11_dir = published();
  o.out_dir = restored();
  std::ostringstream out, err;
  EXPECT_EQ(app::run_decompress_command(o, {}, out, err), 3);
  EXPECT_NE(err.str().find("no df11 metadata"), std::string::npos) << err.str();
  EXPECT_FALSE(fs::exists(restored()));
}

}  // namespace
}  // namespace df11::clitest
