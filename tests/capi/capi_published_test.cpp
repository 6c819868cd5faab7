// The C API on folders published by the dfloat11 tools (spec 7.8): the official encoder's
// fixtures (tests/interop/fixtures/<family>/official) open with df11_model_open, list every
// weight with its config.json shape, and decode to the original BF16 model's bytes
// (<family>/bf16); a corrupted group is refused at open, naming the file and the group.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#define DF11_EXPERIMENTAL
#include "df11/df11.h"
#include "df11/safetensors.h"

namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(DF11_SOURCE_DIR) / "tests" / "interop" / "fixtures";

struct Handle {
  df11_model* m = nullptr;
  ~Handle() { df11_model_close(m); }
};

std::string shard_of(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".safetensors") return e.path().string();
  }
  return "";
}

class Published : public ::testing::TestWithParam<const char*> {};

TEST_P(Published, DecodesToTheOriginalWeights) {
  const fs::path family = kFixtures / GetParam();
  Handle model;
  ASSERT_EQ(df11_model_open((family / "official").c_str(), &model.m), DF11_OK)
      << df11_model_errmsg(model.m);
  auto original = df11::SafetensorsFile::open(shard_of(family / "bf16"));
  ASSERT_TRUE(static_cast<bool>(original)) << original.status().message();
  const size_t n = df11_model_tensor_count(model.m);
  size_t members = 0, compared = 0;
  for (size_t i = 0; i < n; ++i) {
    std::string name = df11_tensor_name(model.m, i);
    if (df11_tensor_group(model.m, i) != SIZE_MAX) {
      ++members;
      EXPECT_STREQ(df11_tensor_dtype(model.m, i), "BF16");
    }
    auto want = original->tensor_bytes(name);
    if (!want && name == "lm_head.weight") {  // the tied head the encoder coded apart
      want = original->tensor_bytes("model.embed_tokens.weight");
    }
    ASSERT_TRUE(static_cast<bool>(want)) << name;
    uint64_t elements = 1;
    for (size_t k = 0; k < df11_tensor_rank(model.m, i); ++k) {
      elements *= df11_tensor_shape(model.m, i)[k];
    }
    const uint64_t bytes = df11_tensor_byte_size(model.m, i);
    ASSERT_EQ(bytes, want->size()) << name;
    if (df11_tensor_group(model.m, i) != SIZE_MAX) {
      EXPECT_EQ(2 * elements, bytes) << name;
    }
    std::vector<uint8_t> got(bytes);
    ASSERT_EQ(df11_decode_tensor(model.m, i, got.data(), bytes), DF11_OK)
        << df11_model_errmsg(model.m);
    EXPECT_EQ(std::memcmp(got.data(), want->data(), bytes), 0) << name;
    ++compared;
  }
  EXPECT_GT(members, 0u);
  EXPECT_EQ(compared, n);
  // Whole groups decode too, their members at their offsets.
  for (size_t g = 0; g < df11_model_group_count(model.m); ++g) {
    std::vector<uint16_t> out(df11_group_element_count(model.m, g));
    ASSERT_EQ(df11_decode_group(model.m, g, out.data(), 2 * out.size()), DF11_OK)
        << df11_model_errmsg(model.m);
    // The execution layout's sizing lists the group's members as the handle does (a
    // published folder has no df11 metadata to take them from).
    size_t matrices = 0, workspace = 0;
    const df11_status rc = df11_cuda_exec_workspace_bytes(model.m, g, &matrices, &workspace);
    if (df11_has_cuda()) {
      ASSERT_EQ(rc, DF11_OK) << df11_model_errmsg(model.m);
      EXPECT_EQ(matrices, df11_group_member_count(model.m, g));
    } else {
      EXPECT_EQ(rc, DF11_ERROR_UNSUPPORTED);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Published,
                         ::testing::Values("llama", "qwen2", "qwen3", "mistral", "gemma3", "phi3",
                                           "qwen3moe", "flux"));

TEST(PublishedHostile, CorruptOutputPositionsAreRefusedAtOpenNamingTheGroup) {
  const fs::path src = kFixtures / "phi3" / "official";
  const fs::path dir =
      fs::temp_directory_path() / ("df11_capi_published_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy(src, dir, fs::copy_options::recursive);
  const fs::path shard = dir / "model.safetensors";
  uint64_t positions_at = 0, positions_bytes = 0;
  {
    auto file = df11::SafetensorsFile::open(shard.string());
    ASSERT_TRUE(static_cast<bool>(file));
    for (const df11::TensorInfo& t : file->header().tensors) {
      if (t.name == "model.layers.1.output_positions") {
        positions_at = file->tensor_bytes(t).data() - file->bytes().data();
        positions_bytes = t.byte_size();
      }
    }
  }
  ASSERT_GE(positions_bytes, 8u);
  {
    // The last output position MUST be the group's weight count (spec 3.2): one more is a
    // group that claims a weight no block decodes, caught before any decode.
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(positions_at + positions_bytes - 4));
    char last[4];
    f.read(last, 4);
    ++last[0];
    f.seekp(static_cast<std::streamoff>(positions_at + positions_bytes - 4));
    f.write(last, 4);
  }
  Handle model;
  const df11_status rc = df11_model_open(dir.c_str(), &model.m);
  EXPECT_NE(rc, DF11_OK);
  const std::string message = df11_model_errmsg(model.m);
  EXPECT_NE(message.find("model.safetensors"), std::string::npos) << message;
  EXPECT_NE(message.find("group 'model.layers.1'"), std::string::npos) << message;
  EXPECT_EQ(df11_model_tensor_count(model.m), 0u);
  fs::remove_all(dir);
}

TEST(PublishedHostile, ShapesConfigJsonDoesNotGiveAreNamed) {
  const fs::path src = kFixtures / "phi3" / "official";
  const fs::path dir =
      fs::temp_directory_path() / ("df11_capi_unknown_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy(src / "model.safetensors", dir / "model.safetensors");
  // The encoder's own config.json: dfloat11_config alone, no architecture.
  std::ifstream in(src / "config.json");
  const nlohmann::json config = nlohmann::json::parse(in);
  ASSERT_TRUE(config.contains("dfloat11_config"));
  std::ofstream(dir / "config.json")
      << nlohmann::json{{"dfloat11_config", config["dfloat11_config"]}}.dump();
  Handle model;
  EXPECT_EQ(df11_model_open(dir.c_str(), &model.m), DF11_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(df11_model_errmsg(model.m)).find("shapes"), std::string::npos)
      << df11_model_errmsg(model.m);
  fs::remove_all(dir);
}

}  // namespace
