// df11-mkmodel (tools/), run as a process: a valid Hugging Face folder (shards, index, config,
// side files), deterministic for a seed at any thread count, the documented value statistics,
// and an input that df11 inspect predicts to compress like a real Llama.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "cli_process.h"
#include "cli_test_model.h"
#include "df11/model_folder.h"
#include "df11/safetensors.h"
#include "tools_inspect_run.h"

namespace df11::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct MkmodelRun {
  int code = -1;
  std::string out, err;
};

// Runs the df11-mkmodel of this build tree with `args` (shell-quoted by the caller).
MkmodelRun mkmodel(const clitest::TempDir& scratch, const std::string& args) {
  const clitest::ProcessResult p = clitest::run_mkmodel(args, scratch.path());
  return {p.exit_code, p.out, p.err};
}

// Statistics of a BF16 tensor's values.
struct Moments {
  double mean = 0, std = 0;
};
Moments moments(std::span<const uint8_t> bytes) {
  double s = 0, s2 = 0;
  const size_t n = bytes.size() / 2;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t u = (uint32_t{bytes[2 * i]} | uint32_t{bytes[2 * i + 1]} << 8) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    s += f;
    s2 += double{f} * f;
  }
  const double mean = s / n;
  return {mean, std::sqrt(s2 / n - mean * mean)};
}

constexpr const char* kSmall =
    "--hidden 64 --intermediate 192 --vocab 4096 --heads 4 --layers 3 --shard-size 200kB";

// A size below what one layer takes is refused, naming the smallest size, instead of writing
// a model of another size (--size 1KB once wrote 71 MB without a word).
TEST(Mkmodel, SizeBelowTheSmallestModelIsRefused) {
  clitest::TempDir scratch;
  const MkmodelRun r = mkmodel(scratch, (scratch / "m").string() + " --size 1KB");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--size 1KB: the smallest model with these dimensions (1 layer, hidden "
                       "512, vocab 32000) is 71.2 MB"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(scratch / "m"));
  // A size the smallest model nearly meets is still made.
  EXPECT_EQ(mkmodel(scratch, (scratch / "ok").string() + " --size 64MB").code, 0);
}

TEST(Mkmodel, WritesAValidShardedHuggingFaceFolder) {
  clitest::TempDir dir;
  const MkmodelRun r = mkmodel(dir, (dir / "m").string() + " " + kSmall + " --seed 3");
  ASSERT_EQ(r.code, 0) << r.err;
  auto folder = app::open_model_folder(dir / "m");
  ASSERT_TRUE(folder.is_ok()) << folder.status().to_string();
  ASSERT_GT(folder->shards.size(), 2u);
  const size_t n = folder->shards.size();
  std::map<std::string, std::string> where;  // tensor -> shard
  uint64_t total = 0;
  for (size_t s = 0; s < n; ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1, n);
    EXPECT_EQ(folder->shard_names[s], name);
    const SafetensorsHeader& h = folder->shards[s].header();
    ASSERT_NE(h.metadata_value("format"), nullptr);
    EXPECT_EQ(*h.metadata_value("format"), "pt");
    for (const TensorInfo& t : h.tensors) {
      where[t.name] = name;
      total += t.byte_size();
    }
  }
  // Llama names and shapes (GQA: 4 heads of 16, one key/value head).
  const auto shape = [&](const std::string& t) {
    const app::TensorLocation& at = folder->tensors.at(t);
    return folder->tensor(at).shape;
  };
  EXPECT_EQ(where.size(), 1 + 3 * 9 + 1 + 1 + 1u);
  EXPECT_EQ(shape("model.embed_tokens.weight"), (std::vector<uint64_t>{4096, 64}));
  EXPECT_EQ(shape("lm_head.weight"), (std::vector<uint64_t>{4096, 64}));
  EXPECT_EQ(shape("model.layers.2.self_attn.k_proj.weight"), (std::vector<uint64_t>{16, 64}));
  EXPECT_EQ(shape("model.layers.2.mlp.down_proj.weight"), (std::vector<uint64_t>{64, 192}));
  EXPECT_EQ(shape("model.layers.0.post_attention_layernorm.weight"), (std::vector<uint64_t>{64}));
  EXPECT_EQ(shape("model.rotary_emb.inv_freq"), (std::vector<uint64_t>{8}));
  // Hugging Face splits between tensors, so some block straddles two shards.
  bool straddles = false;
  for (int l = 0; l < 3; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    straddles |= where[p + "self_attn.q_proj.weight"] != where[p + "mlp.down_proj.weight"];
  }
  EXPECT_TRUE(straddles);
  // The index maps every tensor to its shard and totals the tensor bytes.
  ASSERT_TRUE(folder->index_text.has_value());
  const json index = json::parse(*folder->index_text);
  EXPECT_EQ(index["metadata"]["total_size"], total);
  const auto weight_map = index["weight_map"].get<std::map<std::string, std::string>>();
  EXPECT_EQ(weight_map, where);
  const json config = json::parse(*folder->config_text);
  EXPECT_EQ(config["architectures"], json::array({"LlamaForCausalLM"}));
  EXPECT_EQ(config["hidden_size"], 64);
  EXPECT_EQ(config["num_hidden_layers"], 3);
  EXPECT_EQ(config["num_key_value_heads"], 1);
  EXPECT_EQ(config["torch_dtype"], "bfloat16");
  EXPECT_EQ(config["tie_word_embeddings"], false);
  for (const char* side : {"generation_config.json", "tokenizer.json"}) {
    EXPECT_NO_THROW(json::parse(clitest::read_text(dir / "m" / side))) << side;
  }
}

TEST(Mkmodel, ValuesFollowTheDocumentedDistributions) {
  clitest::TempDir dir;
  ASSERT_EQ(mkmodel(dir, (dir / "m").string() + " " + kSmall).code, 0);
  auto folder = app::open_model_folder(dir / "m");
  ASSERT_TRUE(folder.is_ok()) << folder.status().to_string();
  const auto bytes = [&](const std::string& t) {
    const app::TensorLocation& at = folder->tensors.at(t);
    return folder->shards[at.shard].tensor_bytes(folder->tensor(at));
  };
  // Linear weights: N(0, 1/sqrt(fan_in)), up to rare outliers (which can only widen it).
  const Moments embed = moments(bytes("model.embed_tokens.weight"));
  EXPECT_NEAR(embed.mean, 0.0, 0.005);
  EXPECT_GT(embed.std, 0.98 / 8);
  EXPECT_LT(embed.std, 1.10 / 8);
  const Moments down = moments(bytes("model.layers.1.mlp.down_proj.weight"));
  EXPECT_GT(down.std, 0.95 / std::sqrt(192.0));
  // RMSNorm scales: 1 + N(0, 0.05).
  const Moments norm = moments(bytes("model.layers.0.input_layernorm.weight"));
  EXPECT_NEAR(norm.mean, 1.0, 0.02);
  EXPECT_NEAR(norm.std, 0.05, 0.015);
  // Rotary inverse frequencies, F32: 1 / 10000^(2i / 16).
  const auto inv = bytes("model.rotary_emb.inv_freq");
  for (int i = 0; i < 8; ++i) {
    float f;
    std::memcpy(&f, inv.data() + 4 * i, 4);
    EXPECT_FLOAT_EQ(f, static_cast<float>(1.0 / std::pow(10000.0, 2.0 * i / 16.0)));
  }
}

TEST(Mkmodel, DeterministicForASeedAtAnyThreadCount) {
  clitest::TempDir dir;
  ASSERT_EQ(mkmodel(dir, (dir / "a").string() + " " + kSmall + " --seed 5 --threads 1").code, 0);
  ASSERT_EQ(mkmodel(dir, (dir / "b").string() + " " + kSmall + " --seed 5 --threads 2").code, 0);
  ASSERT_EQ(mkmodel(dir, (dir / "c").string() + " " + kSmall + " --seed 6").code, 0);
  const auto a = clitest::tree_sha256(dir / "a");
  EXPECT_EQ(a, clitest::tree_sha256(dir / "b"));
  const auto c = clitest::tree_sha256(dir / "c");
  EXPECT_NE(a.at("model-00001-of-00004.safetensors"), c.at("model-00001-of-00004.safetensors"));
  EXPECT_EQ(a.at("config.json"), c.at("config.json"));
}

TEST(Mkmodel, TiedSizeAndExistingOutput) {
  clitest::TempDir dir;
  // --size picks the layer count: 3 layers of 5.6 MB on top of 2 MB of embeddings.
  MkmodelRun r = mkmodel(dir, (dir / "t").string() + " --size 20MB --vocab 1000 --tied");
  ASSERT_EQ(r.code, 0) << r.err;
  auto folder = app::open_model_folder(dir / "t");
  ASSERT_TRUE(folder.is_ok()) << folder.status().to_string();
  EXPECT_FALSE(folder->tensors.contains("lm_head.weight"));
  EXPECT_EQ(folder->shard_names, std::vector<std::string>{"model.safetensors"});
  EXPECT_FALSE(folder->index_text.has_value());  // one shard: no index, as transformers does
  const json config = json::parse(*folder->config_text);
  EXPECT_EQ(config["tie_word_embeddings"], true);
  EXPECT_EQ(config["hidden_size"], 512);
  EXPECT_EQ(config["num_hidden_layers"], 3);
  // A non-empty folder needs --force, which replaces the model files it wrote before.
  r = mkmodel(dir, (dir / "t").string() + " " + kSmall);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("not empty"), std::string::npos) << r.err;
  r = mkmodel(dir, (dir / "t").string() + " " + kSmall + " --force");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(dir / "t" / "model.safetensors"));
  EXPECT_TRUE(fs::exists(dir / "t" / "model.safetensors.index.json"));
  // Usage errors.
  EXPECT_EQ(mkmodel(dir, (dir / "u").string() + " --size 1GB --layers 2").code, 2);
  EXPECT_EQ(mkmodel(dir, (dir / "u").string() + " --size lots").code, 2);
  EXPECT_EQ(mkmodel(dir, (dir / "u").string() + " --hidden 64 --heads 3").code, 2);
}

TEST(Mkmodel, InspectPredictsALlamaLikeRatio) {
  clitest::TempDir dir;
  ASSERT_EQ(mkmodel(dir, (dir / "m").string() + " " + kSmall).code, 0);
  const json j = inspect_json((dir / "m").string());
  EXPECT_EQ(j["kind"], "bf16");
  EXPECT_EQ(j["groups"].size(), 5u);  // embed_tokens, 3 layers, lm_head
  EXPECT_EQ(j["totals"]["groups_coded"], 5);
  const double ratio = j["totals"]["coded_ratio"];
  EXPECT_GT(ratio, 0.64);  // Gaussian weights: exponent entropy about 2.6 bits
  EXPECT_LT(ratio, 0.72);
  EXPECT_EQ(j["raw_tensors"].size(), 3u * 2 + 2);  // norms and inv_freq
}

}  // namespace
}  // namespace df11::test
