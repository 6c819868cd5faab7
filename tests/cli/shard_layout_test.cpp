// Blocks and shards overlapping every way they can (spec 7.5): a block spanning two shards or
// many, a shard holding only the tail of a block, a shard holding only raw tensors, an MoE
// layer larger than a shard. An original shard whose tensors all join groups that start in
// an earlier shard gets no DF11 shard (its source record goes with its first tensor): compress
// once wrote it as a header-only file, left it out of the index, and exited 0 on a folder
// that its own verify and decompress refused.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "cli_fixture.h"
#include "cli_process.h"

namespace df11::clitest {
namespace {

constexpr uint64_t kD = 32;  // hidden width

void add(std::vector<SyntheticTensor>& t, const std::string& name, std::vector<uint64_t> shape,
         Dtype dtype = Dtype::kBF16) {
  t.push_back(SyntheticTensor{name, std::move(shape), dtype});
}

// The 9 tensors of a Llama decoder layer, in the order a checkpoint stores them.
void llama_layer(std::vector<SyntheticTensor>& t, int layer) {
  const std::string p = "model.layers." + std::to_string(layer) + ".";
  add(t, p + "input_layernorm.weight", {kD});
  for (const char* m : {"q_proj", "k_proj", "v_proj", "o_proj"}) {
    add(t, p + "self_attn." + m + ".weight", {kD, kD});
  }
  add(t, p + "mlp.gate_proj.weight", {2 * kD, kD});
  add(t, p + "mlp.up_proj.weight", {2 * kD, kD});
  add(t, p + "mlp.down_proj.weight", {kD, 2 * kD});
  add(t, p + "post_attention_layernorm.weight", {kD});
}

SyntheticCheckpoint llama(int layers) {
  SyntheticCheckpoint c;
  c.config_json = R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", )"
                  R"("tie_word_embeddings": false, "vocab_size": 128})";
  add(c.tensors, "model.embed_tokens.weight", {128, kD});
  for (int l = 0; l < layers; ++l) llama_layer(c.tensors, l);
  add(c.tensors, "model.norm.weight", {kD});
  add(c.tensors, "model.rotary_emb.inv_freq", {kD / 4}, Dtype::kF32);
  add(c.tensors, "lm_head.weight", {128, kD});
  return c;
}

class ShardLayout : public PipelineFixture {
 protected:
  // Compresses `c` and checks the DF11 folder's structure: every .safetensors file holds
  // tensors and is one the index names, the folder record lists exactly those; then verify
  // (with and without --against) passes and decompress restores every file byte for byte.
  // Returns the DF11 shard file names.
  std::set<std::string> expect_layout(const SyntheticCheckpoint& c) {
    write_checkpoint(model(), c);
    const Captured out = compress();
    EXPECT_EQ(out.code, 0) << out.err;
    if (out.code != 0) return {};
    std::set<std::string> files;
    for (const std::string& name : list_dir(df11())) {
      if (!name.ends_with(".safetensors")) continue;
      files.insert(name);
      auto f = SafetensorsFile::open((df11() / name).string());
      EXPECT_TRUE(f.is_ok()) << f.status().to_string();
      if (f.is_ok()) {
        EXPECT_FALSE(f->header().tensors.empty()) << name << ": no tensors";
      }
    }
    std::set<std::string> indexed;
    const auto index = read_json(df11() / "model.safetensors.index.json");
    for (const auto& [tensor, file] : index["weight_map"].items()) {
      indexed.insert(file.get<std::string>());
    }
    EXPECT_EQ(indexed, files);
    const Df11Metadata first = metadata_of(df11() / *files.begin());
    EXPECT_TRUE(first.shards.has_value());
    if (first.shards) {
      EXPECT_EQ(std::set<std::string>(first.shards->begin(), first.shards->end()), files);
    }
    const Captured v = verify();
    EXPECT_EQ(v.code, 0) << v.out << v.err;
    EXPECT_EQ(v.err, "");  // no warning either
    const Captured va = verify(model());
    EXPECT_EQ(va.code, 0) << va.out << va.err;
    const Captured d = decompress();
    EXPECT_EQ(d.code, 0) << d.err;
    EXPECT_EQ(tree_sha256(restored()), tree_sha256(model()));
    return files;
  }
};

TEST_F(ShardLayout, BlockSpansTwoShardsTheSecondHoldingOnlyItsTail) {
  SyntheticCheckpoint c = llama(2);
  // 1: embed, layer 0's norm and q, k, v | 2: o, gate, up, down of layer 0 (its tail only) |
  // 3: the rest.
  c.shard_tensors = {5, 4, 1 + 9 + 3};
  const auto files = expect_layout(c);
  EXPECT_EQ(files, (std::set<std::string>{"model-00001-of-00003.safetensors",
                                          "model-00003-of-00003.safetensors"}));
  // The second original is rebuilt from the record that went with its first tensor.
  bool recorded = false;
  for (const SourceFile& s : metadata_of(df11() / "model-00001-of-00003.safetensors").sources) {
    recorded = recorded || s.file == "model-00002-of-00003.safetensors";
  }
  EXPECT_TRUE(recorded);
}

TEST_F(ShardLayout, BlockSpansTwoShardsWithMoreAfterIt) {
  SyntheticCheckpoint c = llama(2);
  c.shard_tensors = {5, 4 + 1 + 9, 3};  // the second shard: layer 0's tail, then layer 1
  EXPECT_EQ(expect_layout(c).size(), 3u);
}

TEST_F(ShardLayout, BlockSpansManyShards) {
  SyntheticCheckpoint c = llama(2);
  // One member of layer 0 per shard: shards 2 to 7 hold nothing but members of a group that
  // starts in shard 1.
  c.shard_tensors = {3, 1, 1, 1, 1, 1, 1, 1 + 9 + 3};
  const auto files = expect_layout(c);
  EXPECT_EQ(files, (std::set<std::string>{"model-00001-of-00008.safetensors",
                                          "model-00008-of-00008.safetensors"}));
}

TEST_F(ShardLayout, ShardsInsideOneBlock) {
  SyntheticCheckpoint c;
  c.config_json = R"({"architectures": ["LlamaForCausalLM"], "tie_word_embeddings": false})";
  llama_layer(c.tensors, 0);
  // The first shard starts the block, the next two continue it, the last ends it and holds
  // the post-attention norm (raw).
  c.shard_tensors = {2, 2, 2, 3};
  EXPECT_EQ(expect_layout(c).size(), 2u);
}

TEST_F(ShardLayout, ShardOfRawTensorsOnly) {
  SyntheticCheckpoint c = llama(1);
  // 1: embed and layer 0 | 2: model.norm and inv_freq (raw only) | 3: lm_head.
  c.shard_tensors = {10, 2, 1};
  EXPECT_EQ(expect_layout(c).size(), 3u);
}

TEST_F(ShardLayout, ShardOfABlockTailAndRawTensors) {
  SyntheticCheckpoint c = llama(1);
  // 2: the tail of layer 0 and its post-attention norm (raw), then model.norm.
  c.shard_tensors = {6, 5, 2};
  EXPECT_EQ(expect_layout(c).size(), 3u);
}

TEST_F(ShardLayout, TiedHeadWithTheEmbeddingAlone) {
  // The tied lm_head copy codes the embedding again in the embedding's shard; the block
  // after it spans the next two shards.
  SyntheticCheckpoint c;
  c.config_json =
      R"({"architectures": ["LlamaForCausalLM"], "tie_word_embeddings": true, "vocab_size": 128})";
  add(c.tensors, "model.embed_tokens.weight", {128, kD});
  llama_layer(c.tensors, 0);
  add(c.tensors, "model.norm.weight", {kD});
  c.shard_tensors = {1, 3, 4, 3};
  EXPECT_EQ(expect_layout(c).size(), 3u);
}

TEST_F(ShardLayout, MoeLayerLargerThanAShard) {
  // A Mixtral layer: attention, the router and 8 experts of three Linears each, coded as one
  // group, over 6 shards of 5 tensors; only the first holds the group.
  SyntheticCheckpoint c;
  c.config_json = R"({"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", )"
                  R"("tie_word_embeddings": false})";
  const std::string p = "model.layers.0.";
  add(c.tensors, p + "input_layernorm.weight", {kD});
  for (const char* m : {"q_proj", "k_proj", "v_proj", "o_proj"}) {
    add(c.tensors, p + "self_attn." + m + ".weight", {kD, kD});
  }
  add(c.tensors, p + "block_sparse_moe.gate.weight", {8, kD});
  for (int e = 0; e < 8; ++e) {
    const std::string x = p + "block_sparse_moe.experts." + std::to_string(e) + ".";
    add(c.tensors, x + "w1.weight", {2 * kD, kD});
    add(c.tensors, x + "w2.weight", {kD, 2 * kD});
    add(c.tensors, x + "w3.weight", {2 * kD, kD});
  }
  add(c.tensors, p + "post_attention_layernorm.weight", {kD});
  ASSERT_EQ(c.tensors.size(), 31u);
  c.shard_tensors = {6, 5, 5, 5, 5, 5};
  const auto files = expect_layout(c);
  // The last shard ends with the post-attention norm, stored raw: it stays.
  EXPECT_EQ(files, (std::set<std::string>{"model-00001-of-00006.safetensors",
                                          "model-00006-of-00006.safetensors"}));
  const Df11Metadata first = metadata_of(df11() / "model-00001-of-00006.safetensors");
  ASSERT_EQ(first.groups.size(), 1u);
  EXPECT_EQ(first.groups[0].members.size(), 29u);
}

TEST_F(ShardLayout, GroupByTensorKeepsEveryShard) {
  SyntheticCheckpoint c = llama(2);
  c.shard_tensors = {3, 1, 1, 1, 1, 1, 1, 1 + 9 + 3};
  write_checkpoint(model(), c);
  CompressOptions o = compress_options();
  o.group_by = app::GroupBy::kTensor;
  expect_round_trip(o);
  EXPECT_EQ(list_dir(df11()).size(), list_dir(model()).size());
}

// The case the issue reported, through the binary: a generated model whose layers are each
// larger than the shard size.
TEST(ShardLayoutBinary, MkmodelLayersLargerThanShards) {
  TempDir tmp;
  const std::string mkmodel = std::string(DF11_BINARY_DIR) + "/tools/df11-mkmodel";
  const std::string cmd = mkmodel + " " + (tmp / "m6").string() +
                          " --layers 2 --hidden 512 --vocab 1000 --shard-size 1500KB >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  fs::create_directories(tmp / "logs");
  const ProcessResult c =
      run_df11({"compress", (tmp / "m6").string(), "-o", (tmp / "m6.df11").string()}, tmp / "logs");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const ProcessResult v = run_df11({"verify", (tmp / "m6.df11").string()}, tmp / "logs");
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  const ProcessResult d = run_df11(
      {"decompress", (tmp / "m6.df11").string(), "-o", (tmp / "back").string()}, tmp / "logs");
  EXPECT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(tree_sha256(tmp / "back"), tree_sha256(tmp / "m6"));
}

}  // namespace
}  // namespace df11::clitest
