// The C API on folders published by the dfloat11 tools (spec 7.8): the official encoder's
// fixtures (tests/interop/fixtures/<family>/official) open with df11_model_open, list every
// weight with its config.json shape, and decode to the original BF16 model's bytes
// (<family>/bf16); a corrupted group is refused at open, naming the file and the group. The
// encoder's default output (<family>/official-single: config.json holds dfloat11_config
// alone) opens with df11_model_open_with_shapes, the shapes taken from the BF16 model.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
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

// Every tensor of `model` decodes to the BF16 original's bytes (a tied head the encoder coded
// apart to the embedding's), and every group decodes.
void expect_original_weights(df11_model* model, const fs::path& bf16) {
  auto original = df11::SafetensorsFile::open(shard_of(bf16));
  ASSERT_TRUE(static_cast<bool>(original)) << original.status().message();
  const size_t n = df11_model_tensor_count(model);
  size_t members = 0, compared = 0;
  for (size_t i = 0; i < n; ++i) {
    std::string name = df11_tensor_name(model, i);
    if (df11_tensor_group(model, i) != SIZE_MAX) {
      ++members;
      EXPECT_STREQ(df11_tensor_dtype(model, i), "BF16");
    }
    auto want = original->tensor_bytes(name);
    if (!want && name == "lm_head.weight") {  // the tied head the encoder coded apart
      want = original->tensor_bytes("model.embed_tokens.weight");
    }
    ASSERT_TRUE(static_cast<bool>(want)) << name;
    uint64_t elements = 1;
    for (size_t k = 0; k < df11_tensor_rank(model, i); ++k) {
      elements *= df11_tensor_shape(model, i)[k];
    }
    const uint64_t bytes = df11_tensor_byte_size(model, i);
    ASSERT_EQ(bytes, want->size()) << name;
    if (df11_tensor_group(model, i) != SIZE_MAX) {
      EXPECT_EQ(2 * elements, bytes) << name;
    }
    std::vector<uint8_t> got(bytes);
    ASSERT_EQ(df11_decode_tensor(model, i, got.data(), bytes), DF11_OK) << df11_model_errmsg(model);
    EXPECT_EQ(std::memcmp(got.data(), want->data(), bytes), 0) << name;
    ++compared;
  }
  EXPECT_GT(members, 0u);
  EXPECT_EQ(compared, n);
  // Whole groups decode too, their members at their offsets.
  for (size_t g = 0; g < df11_model_group_count(model); ++g) {
    std::vector<uint16_t> out(df11_group_element_count(model, g));
    ASSERT_EQ(df11_decode_group(model, g, out.data(), 2 * out.size()), DF11_OK)
        << df11_model_errmsg(model);
    // The execution layout's sizing lists the group's members as the handle does (a
    // published folder has no df11 metadata to take them from).
    size_t matrices = 0, workspace = 0;
    const df11_status rc = df11_cuda_exec_workspace_bytes(model, g, &matrices, &workspace);
    if (df11_has_cuda()) {
      ASSERT_EQ(rc, DF11_OK) << df11_model_errmsg(model);
      EXPECT_EQ(matrices, df11_group_member_count(model, g));
    } else {
      EXPECT_EQ(rc, DF11_ERROR_UNSUPPORTED);
    }
    // So does the compact layout's.
    matrices = workspace = 0;
    const df11_status crc = df11_cuda_compact_workspace_bytes(model, g, &matrices, &workspace);
    if (df11_has_cuda()) {
      ASSERT_EQ(crc, DF11_OK) << df11_model_errmsg(model);
      EXPECT_EQ(matrices, df11_group_member_count(model, g));
      EXPECT_GT(workspace, 2 * out.size());  // the group's BF16 and the transcode's own
    } else {
      EXPECT_EQ(crc, DF11_ERROR_UNSUPPORTED);
    }
  }
}

class Published : public ::testing::TestWithParam<const char*> {};

TEST_P(Published, DecodesToTheOriginalWeights) {
  const fs::path family = kFixtures / GetParam();
  Handle model;
  ASSERT_EQ(df11_model_open((family / "official").c_str(), &model.m), DF11_OK)
      << df11_model_errmsg(model.m);
  expect_original_weights(model.m, family / "bf16");
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

// The shapes of every tensor of the BF16 shard in `dir`, as df11_shape entries pointing into
// `names` and `dims` (kept alive by the caller).
std::vector<df11_shape> shapes_of(const fs::path& dir, std::vector<std::string>& names,
                                  std::vector<std::vector<uint64_t>>& dims) {
  auto file = df11::SafetensorsFile::open(shard_of(dir));
  EXPECT_TRUE(static_cast<bool>(file));
  if (!file) return {};
  names.clear();
  dims.clear();
  for (const df11::TensorInfo& t : file->header().tensors) {
    names.push_back(t.name);
    dims.push_back(t.shape);
  }
  std::vector<df11_shape> shapes;
  for (size_t i = 0; i < names.size(); ++i) {
    shapes.push_back({names[i].c_str(), dims[i].size(), dims[i].data()});
  }
  return shapes;
}

class SingleFile : public ::testing::TestWithParam<const char*> {};

// The encoder's default output (config.json: dfloat11_config alone). With the BF16 model's
// shapes (every tensor, raw ones too: names that are no member are ignored) it decodes to
// the original; Qwen3's tied head (coded as the group lm_head, absent from the BF16 shard)
// takes its embedding's shape.
TEST_P(SingleFile, OpensWithTheCallersShapes) {
  const fs::path family = kFixtures / GetParam();
  std::vector<std::string> names;
  std::vector<std::vector<uint64_t>> dims;
  const std::vector<df11_shape> shapes = shapes_of(family / "bf16", names, dims);
  ASSERT_FALSE(shapes.empty());
  Handle model;
  ASSERT_EQ(df11_model_open_with_shapes((family / "official-single").c_str(), shapes.data(),
                                        shapes.size(), &model.m),
            DF11_OK)
      << df11_model_errmsg(model.m);
  expect_original_weights(model.m, family / "bf16");
  const size_t head = df11_model_find_tensor(model.m, "lm_head.weight");
  ASSERT_NE(head, SIZE_MAX);
  ASSERT_EQ(df11_tensor_rank(model.m, head), 2u);
  EXPECT_EQ(df11_tensor_shape(model.m, head)[0], 512u);
  EXPECT_EQ(df11_tensor_shape(model.m, head)[1], 64u);
}

// Without shapes, the error says config.json holds no model config and where shapes go.
TEST_P(SingleFile, WithoutShapesTheErrorSaysWhereTheyCome) {
  const fs::path dir = kFixtures / GetParam() / "official-single";
  Handle model;
  EXPECT_EQ(df11_model_open(dir.c_str(), &model.m), DF11_ERROR_UNSUPPORTED);
  const std::string message = df11_model_errmsg(model.m);
  EXPECT_NE(message.find(dir.string() + ": the shapes of 16 coded weights are unknown "
                                        "(config.json holds no model config, only "
                                        "dfloat11_config): 'lm_head.weight'"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("df11_model_open_with_shapes"), std::string::npos) << message;
  EXPECT_EQ(df11_model_tensor_count(model.m), 0u);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SingleFile, ::testing::Values("llama", "qwen3"));

TEST(SingleFileHostile, AShapeOfAnotherSizeIsRefusedNamingTheMember) {
  const fs::path family = kFixtures / "llama";
  std::vector<std::string> names;
  std::vector<std::vector<uint64_t>> dims;
  std::vector<df11_shape> shapes = shapes_of(family / "bf16", names, dims);
  const uint64_t wrong[2] = {64, 64};  // k_proj is [32, 64]
  for (df11_shape& s : shapes) {
    if (std::string(s.name) == "model.layers.1.self_attn.k_proj.weight") s.dims = wrong;
  }
  Handle model;
  EXPECT_EQ(df11_model_open_with_shapes((family / "official-single").c_str(), shapes.data(),
                                        shapes.size(), &model.m),
            DF11_ERROR_BAD_SHAPE);
  const std::string message = df11_model_errmsg(model.m);
  EXPECT_NE(message.find("model.safetensors: group 'model.layers.1': member "
                         "'model.layers.1.self_attn.k_proj.weight' holds 2048 weights, its "
                         "shape [64, 64] (from the shapes the caller gave) has 4096"),
            std::string::npos)
      << message;
}

TEST(SingleFileHostile, ShapesNoSourceGivesAreNamed) {
  const fs::path family = kFixtures / "llama";
  std::vector<std::string> names;
  std::vector<std::vector<uint64_t>> dims;
  std::vector<df11_shape> shapes = shapes_of(family / "bf16", names, dims);
  shapes.erase(std::remove_if(shapes.begin(), shapes.end(),
                              [](const df11_shape& s) {
                                return std::string(s.name).find("mlp.down_proj") !=
                                       std::string::npos;
                              }),
               shapes.end());
  Handle model;
  EXPECT_EQ(df11_model_open_with_shapes((family / "official-single").c_str(), shapes.data(),
                                        shapes.size(), &model.m),
            DF11_ERROR_UNSUPPORTED);
  const std::string message = df11_model_errmsg(model.m);
  EXPECT_NE(message.find("the shapes of 2 coded weights are unknown"), std::string::npos)
      << message;
  EXPECT_NE(message.find("'model.layers.0.mlp.down_proj.weight', "
                         "'model.layers.1.mlp.down_proj.weight'; the shapes the caller gave "
                         "do not name them either"),
            std::string::npos)
      << message;
}

TEST(SingleFileHostile, UnusableShapeArraysAreRefusedNamingTheEntry) {
  const std::string dir = (kFixtures / "llama" / "official-single").string();
  const uint64_t dims[2] = {512, 64};
  struct Case {
    std::vector<df11_shape> shapes;
    const df11_shape* data;
    size_t n;
    const char* says;
  };
  std::vector<Case> cases;
  cases.push_back({{}, nullptr, 3, "df11_model_open_with_shapes: shapes is NULL, n_shapes is 3"});
  cases.push_back({{{"lm_head.weight", 2, dims}, {nullptr, 2, dims}},
                   nullptr,
                   2,
                   "df11_model_open_with_shapes: shapes[1]: name is NULL"});
  cases.push_back({{{"lm_head.weight", 2, nullptr}},
                   nullptr,
                   1,
                   "shapes[0] ('lm_head.weight'): dims is NULL, rank is 2"});
  cases.push_back({{{"lm_head.weight", 2, dims}, {"lm_head.weight", 2, dims}},
                   nullptr,
                   2,
                   "shapes[1]: 'lm_head.weight' was given before"});
  for (const Case& c : cases) {
    Handle model;
    EXPECT_EQ(df11_model_open_with_shapes(dir.c_str(), c.shapes.empty() ? c.data : c.shapes.data(),
                                          c.n, &model.m),
              DF11_ERROR_INVALID_ARGUMENT)
        << c.says;
    EXPECT_NE(std::string(df11_model_errmsg(model.m)).find(c.says), std::string::npos)
        << df11_model_errmsg(model.m);
  }
}

}  // namespace
