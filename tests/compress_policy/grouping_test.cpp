// Group derivation from tensor names and the pattern_dict the dfloat11 loader reads.
#include "df11/grouping.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "python_regex.h"

namespace df11::app {
namespace {

TensorEntry bf16(const std::string& name, uint64_t rows, uint64_t cols) {
  return TensorEntry{name, Dtype::kBF16, {rows, cols}, rows * cols};
}

std::vector<TensorEntry> llama_layers(const std::vector<std::string>& order, int layers) {
  std::vector<TensorEntry> t{bf16("model.embed_tokens.weight", 256, 64)};
  for (int l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.push_back(TensorEntry{p + "input_layernorm.weight", Dtype::kBF16, {64}, 64});
    for (const std::string& sub : order) t.push_back(bf16(p + sub + ".weight", 64, 64));
  }
  t.push_back(TensorEntry{"model.norm.weight", Dtype::kBF16, {64}, 64});
  t.push_back(bf16("lm_head.weight", 256, 64));
  return t;
}

const std::vector<std::string> kLlamaOrder{
    "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
    "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj"};

std::vector<std::string> names_of(const std::vector<TensorEntry>& t,
                                  const std::vector<size_t>& idx) {
  std::vector<std::string> names;
  for (size_t i : idx) names.push_back(t[i].name);
  return names;
}

TEST(Grouping, LlamaBlocksEmbeddingsAndHead) {
  const auto tensors = llama_layers(kLlamaOrder, 3);
  const Grouping g = derive_groups(tensors, GroupBy::kBlock);
  ASSERT_EQ(g.groups.size(), 5u);
  EXPECT_EQ(g.groups[0].name, "model.embed_tokens");
  EXPECT_EQ(g.groups[0].kind, GroupKind::kModule);
  EXPECT_EQ(names_of(tensors, g.groups[0].members),
            std::vector<std::string>{"model.embed_tokens.weight"});
  for (int l = 0; l < 3; ++l) {
    const GroupSpec& b = g.groups[1 + l];
    EXPECT_EQ(b.name, "model.layers." + std::to_string(l));
    EXPECT_EQ(b.kind, GroupKind::kBlock);
    EXPECT_EQ(b.block_prefix, "model.layers");
    EXPECT_EQ(b.block_index, std::to_string(l));
    EXPECT_EQ(b.member_modules, kLlamaOrder);
  }
  EXPECT_EQ(g.groups[4].name, "lm_head");
  // Norms (1-D) stay raw, in input order.
  EXPECT_EQ(names_of(tensors, g.raw),
            (std::vector<std::string>{
                "model.layers.0.input_layernorm.weight", "model.layers.1.input_layernorm.weight",
                "model.layers.2.input_layernorm.weight", "model.norm.weight"}));
  EXPECT_TRUE(g.notes.empty());
}

TEST(Grouping, OnlyNonEmpty2dBf16WeightsAreCoded) {
  const std::vector<TensorEntry> tensors{
      bf16("model.layers.0.mlp.up_proj.weight", 8, 8),
      TensorEntry{"model.layers.0.mlp.f32_proj.weight", Dtype::kF32, {8, 8}, 64},
      TensorEntry{"model.layers.0.mlp.conv.weight", Dtype::kBF16, {2, 2, 2}, 8},
      TensorEntry{"model.layers.0.mlp.empty.weight", Dtype::kBF16, {0, 8}, 0},
      bf16("model.layers.0.mlp.up_proj.bias", 8, 8),
      bf16("model.layers.0.weight", 8, 8),     // P itself: no sub-module
      bf16("model.vision_proj.weight", 8, 8),  // not a block, not embed/lm_head
      bf16("weight", 8, 8),
  };
  const Grouping g = derive_groups(tensors, GroupBy::kBlock);
  // spec 7.4: the block, and vision_proj as a module of its own; "model.layers.0" as a
  // module clashes with the block's name and stays raw.
  ASSERT_EQ(g.groups.size(), 2u);
  EXPECT_EQ(g.groups[0].member_modules, std::vector<std::string>{"mlp.up_proj"});
  EXPECT_EQ(g.groups[1].name, "model.vision_proj");
  EXPECT_EQ(g.groups[1].kind, GroupKind::kModule);
  EXPECT_EQ(g.raw.size(), tensors.size() - 2);
}

TEST(Grouping, AnyNumberedModuleIsABlockOutermostFirst) {
  const std::vector<TensorEntry> tensors{
      bf16("transformer.h.0.attn.c_attn.weight", 8, 8),
      bf16("encoder.layer.11.attention.self.query.weight", 8, 8),
      bf16("blocks.2.ff.weight", 8, 8),
      bf16("model.layers.3.mlp.experts.layers.2.w1.weight", 8, 8),
      bf16("model.layers.3.mlp.experts.layers.2.w2.weight", 8, 8),
      bf16("model.hidden.0.fc.weight", 8, 8),  // any word before the number
      bf16("down_blocks.1.attentions.0.transformer_blocks.0.attn1.to_q.weight", 8, 8),
  };
  const Grouping g = derive_groups(tensors, GroupBy::kBlock);
  ASSERT_EQ(g.groups.size(), 6u);
  EXPECT_EQ(g.groups[0].name, "transformer.h.0");
  EXPECT_EQ(g.groups[0].member_modules, std::vector<std::string>{"attn.c_attn"});
  EXPECT_EQ(g.groups[1].name, "encoder.layer.11");
  EXPECT_EQ(g.groups[2].name, "blocks.2");
  EXPECT_EQ(g.groups[2].block_prefix, "blocks");
  EXPECT_EQ(g.groups[3].name, "model.layers.3");
  EXPECT_EQ(g.groups[3].member_modules,
            (std::vector<std::string>{"mlp.experts.layers.2.w1", "mlp.experts.layers.2.w2"}));
  EXPECT_EQ(g.groups[4].name, "model.hidden.0");
  EXPECT_EQ(g.groups[5].name, "down_blocks.1");
  EXPECT_EQ(g.groups[5].member_modules,
            std::vector<std::string>{"attentions.0.transformer_blocks.0.attn1.to_q"});
  EXPECT_TRUE(g.raw.empty());
}

TEST(Grouping, EmbeddingInsideABlockIsAModuleGroup) {
  // T5's relative_attention_bias is an nn.Embedding: the loader cannot take it as a member.
  const std::vector<TensorEntry> tensors{
      bf16("encoder.block.0.layer.0.SelfAttention.q.weight", 8, 8),
      bf16("encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", 32, 4),
      bf16("encoder.block.0.layer.1.DenseReluDense.wi.weight", 8, 8), bf16("shared.weight", 64, 8)};
  const Grouping g = derive_groups(tensors, GroupBy::kBlock);
  ASSERT_EQ(g.groups.size(), 3u);
  EXPECT_EQ(g.groups[0].name, "encoder.block.0");
  EXPECT_EQ(g.groups[0].member_modules,
            (std::vector<std::string>{"layer.0.SelfAttention.q", "layer.1.DenseReluDense.wi"}));
  EXPECT_EQ(g.groups[1].name, "encoder.block.0.layer.0.SelfAttention.relative_attention_bias");
  EXPECT_EQ(g.groups[1].kind, GroupKind::kModule);
  EXPECT_EQ(g.groups[2].name, "shared");
}

// A Mixtral-shaped layer: attention, router and `experts` experts of three matrices.
std::vector<TensorEntry> moe_layers(int layers, int experts, uint64_t rows) {
  std::vector<TensorEntry> t;
  for (int l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    for (int e = 0; e < experts; ++e) {
      for (const char* w : {"w1", "w2", "w3"}) {
        t.push_back(bf16(p + "block_sparse_moe.experts." + std::to_string(e) + "." + w + ".weight",
                         rows, 8));
      }
    }
    t.push_back(bf16(p + "block_sparse_moe.gate.weight", experts, 8));
    t.push_back(bf16(p + "self_attn.q_proj.weight", 8, 8));
  }
  return t;
}

TEST(Grouping, SplitsMoeLayerAboveTheLimitPerExpert) {
  // Mixtral-8x22B: 8 experts x 3 x 6144 x 16384 + attention = 2.45e9 weights per layer, above
  // Max_Elements_Compat. Scaled down: 8 experts x 3 x 64 x 8, limit 2000 weights.
  const auto tensors = moe_layers(2, 8, 64);
  const Grouping g = derive_groups(tensors, GroupBy::kBlock, 2000);
  ASSERT_EQ(g.groups.size(), 2u * (1 + 8)) << g.notes.front();
  // Groups stay in file order: the experts (first in the file), then the rest of the layer.
  EXPECT_EQ(g.groups[0].name, "model.layers.0.block_sparse_moe.experts.0");
  EXPECT_EQ(g.groups[0].block_prefix, "model.layers.0.block_sparse_moe.experts");
  EXPECT_EQ(g.groups[0].member_modules, (std::vector<std::string>{"w1", "w2", "w3"}));
  EXPECT_EQ(g.groups[8].name, "model.layers.0");
  EXPECT_EQ(g.groups[8].member_modules,
            (std::vector<std::string>{"block_sparse_moe.gate", "self_attn.q_proj"}));
  EXPECT_TRUE(g.raw.empty());
  ASSERT_EQ(g.notes.size(), 2u);
  EXPECT_NE(g.notes[0].find("group 'model.layers.0' has 12416 weights, above the loader's "
                            "limit of 2000 (Max_Elements_Compat): coded as 9 groups"),
            std::string::npos)
      << g.notes[0];
  const auto dict = derive_pattern_dict(g.groups, std::vector<bool>(g.groups.size(), true));
  const nlohmann::ordered_json expected = {
      {"model\\.layers\\.\\d+\\.block_sparse_moe\\.experts\\.\\d+", {"w1", "w2", "w3"}},
      {"model\\.layers\\.\\d+", {"block_sparse_moe.gate", "self_attn.q_proj"}}};
  EXPECT_EQ(dict, expected) << dict.dump(2);
  // Each group name fully matches exactly one key.
  for (const GroupSpec& spec : g.groups) {
    int matches = 0;
    for (const auto& [key, value] : dict.items()) {
      matches += std::regex_match(spec.name, std::regex(key)) ? 1 : 0;
    }
    EXPECT_EQ(matches, 1) << spec.name;
  }
}

TEST(Grouping, SplitsToSingleTensorsWhenAnExpertIsStillTooLarge) {
  const auto tensors = moe_layers(1, 2, 64);
  const Grouping g = derive_groups(tensors, GroupBy::kBlock, 1000);  // an expert has 1536
  ASSERT_EQ(g.groups.size(), 1u + 6) << g.notes.front();
  EXPECT_EQ(g.groups[0].name, "model.layers.0.block_sparse_moe.experts.0.w1");
  EXPECT_EQ(g.groups[0].kind, GroupKind::kModule);
  EXPECT_EQ(g.groups[6].name, "model.layers.0");
  EXPECT_NE(g.notes[0].find("and 6 single tensors"), std::string::npos) << g.notes[0];
}

TEST(Grouping, MembersFollowInputOrderAcrossShards) {
  // Input order is file order: a block split across shards keeps that order.
  std::vector<TensorEntry> tensors{bf16("model.layers.0.mlp.up_proj.weight", 8, 8),
                                   bf16("model.layers.1.self_attn.q_proj.weight", 8, 8),
                                   bf16("model.layers.0.self_attn.q_proj.weight", 8, 8)};
  const Grouping g = derive_groups(tensors, GroupBy::kBlock);
  ASSERT_EQ(g.groups.size(), 2u);
  EXPECT_EQ(g.groups[0].member_modules,
            (std::vector<std::string>{"mlp.up_proj", "self_attn.q_proj"}));
  EXPECT_EQ(g.groups[0].members, (std::vector<size_t>{0, 2}));
}

TEST(Grouping, TensorModeMakesOneGroupPerWeight) {
  const auto tensors = llama_layers(kLlamaOrder, 2);
  const Grouping g = derive_groups(tensors, GroupBy::kTensor);
  ASSERT_EQ(g.groups.size(), 2u + 2 * kLlamaOrder.size());
  for (const GroupSpec& spec : g.groups) {
    EXPECT_EQ(spec.kind, GroupKind::kModule);
    ASSERT_EQ(spec.members.size(), 1u);
    EXPECT_EQ(tensors[spec.members[0]].name, spec.name + ".weight");
  }
  EXPECT_EQ(g.groups[1].name, "model.layers.0.self_attn.q_proj");
}

TEST(Grouping, NameClashesLeaveTheGroupRaw) {
  const std::vector<TensorEntry> tensors{
      bf16("model.layers.0.mlp.up_proj.weight", 8, 8),
      TensorEntry{"model.layers.0.gaps", Dtype::kU8, {4}, 4},  // would collide with P.gaps
      bf16("model.layers.1.mlp.up_proj.weight", 8, 8),
  };
  const Grouping g = derive_groups(tensors, GroupBy::kBlock);
  ASSERT_EQ(g.groups.size(), 1u);
  EXPECT_EQ(g.groups[0].name, "model.layers.1");
  EXPECT_EQ(names_of(tensors, g.raw),
            (std::vector<std::string>{"model.layers.0.mlp.up_proj.weight", "model.layers.0.gaps"}));
  ASSERT_EQ(g.notes.size(), 1u);
  EXPECT_NE(g.notes[0].find("model.layers.0.gaps"), std::string::npos) << g.notes[0];
}

TEST(PythonRegex, EscapesLikeReEscape) {
  EXPECT_EQ(python_regex_escape("model.layers"), "model\\.layers");
  EXPECT_EQ(python_regex_escape("a_b9"), "a_b9");
  EXPECT_EQ(python_regex_escape("x-y z"), "x\\-y\\ z");
  EXPECT_EQ(python_regex_escape("()[]{}?*+|^$\\.&~#"),
            "\\(\\)\\[\\]\\{\\}\\?\\*\\+\\|\\^\\$\\\\\\.\\&\\~\\#");
  EXPECT_EQ(python_regex_escape("\t\n"), "\\\t\\\n");
  EXPECT_EQ(python_regex_escape("caf\xc3\xa9"), "caf\xc3\xa9");  // non-ASCII kept
}

nlohmann::ordered_json dict_for(const std::vector<TensorEntry>& tensors,
                                std::vector<bool> coded = {}) {
  const Grouping g = derive_groups(tensors, GroupBy::kBlock);
  if (coded.empty()) coded.assign(g.groups.size(), true);
  return derive_pattern_dict(g.groups, coded);
}

TEST(PatternDict, UniformBlocksShareOneDigitsKey) {
  const auto dict = dict_for(llama_layers(kLlamaOrder, 4));
  const nlohmann::ordered_json expected = {
      {"model\\.embed_tokens", nlohmann::ordered_json::array()},
      {"model\\.layers\\.\\d+", kLlamaOrder},
      {"lm_head", nlohmann::ordered_json::array()}};
  EXPECT_EQ(dict, expected) << dict.dump(2);
}

// Every module path "model.layers.N" must fully match at most one key (the loader applies
// every key that matches), and block N's key must list block N's members.
void expect_exclusive(const nlohmann::ordered_json& dict, int layers,
                      const std::vector<std::vector<std::string>>& lists) {
  for (int n = 0; n < 130; ++n) {
    const std::string path = "model.layers." + std::to_string(n);
    int matches = 0;
    for (const auto& [key, value] : dict.items()) {
      if (!std::regex_match(path, std::regex(key))) continue;
      ++matches;
      ASSERT_LT(n, layers) << key << " matches " << path;
      EXPECT_EQ(value.get<std::vector<std::string>>(), lists[n]) << path;
    }
    EXPECT_EQ(matches, n < layers ? 1 : 0) << path;
  }
}

TEST(PatternDict, HeterogeneousBlocksGetExclusiveAlternations) {
  // Blocks 1 and 12 have their members in another order (split across shards).
  std::vector<std::string> other = kLlamaOrder;
  std::rotate(other.begin(), other.begin() + 4, other.end());
  std::vector<TensorEntry> tensors;
  std::vector<std::vector<std::string>> lists;
  for (int l = 0; l < 13; ++l) {
    const auto& order = (l == 1 || l == 12) ? other : kLlamaOrder;
    lists.push_back(order);
    for (const std::string& sub : order) {
      tensors.push_back(bf16("model.layers." + std::to_string(l) + "." + sub + ".weight", 8, 8));
    }
  }
  const auto dict = dict_for(tensors);
  ASSERT_EQ(dict.size(), 2u) << dict.dump(2);
  EXPECT_TRUE(dict.contains("model\\.layers\\.(?:0|2|3|4|5|6|7|8|9|10|11)")) << dict.dump(2);
  EXPECT_TRUE(dict.contains("model\\.layers\\.(?:1|12)")) << dict.dump(2);
  expect_exclusive(dict, 13, lists);
}

TEST(PatternDict, PrefixesAreIndependent) {
  const std::vector<TensorEntry> tensors{bf16("model.encoder.layers.0.fc1.weight", 8, 8),
                                         bf16("model.encoder.layers.1.fc1.weight", 8, 8),
                                         bf16("model.decoder.layers.0.fc1.weight", 8, 8),
                                         bf16("model.decoder.layers.0.fc2.weight", 8, 8),
                                         bf16("model.decoder.layers.1.fc1.weight", 8, 8)};
  const auto dict = dict_for(tensors);
  const nlohmann::ordered_json expected = {{"model\\.encoder\\.layers\\.\\d+", {"fc1"}},
                                           {"model\\.decoder\\.layers\\.(?:0)", {"fc1", "fc2"}},
                                           {"model\\.decoder\\.layers\\.(?:1)", {"fc1"}}};
  EXPECT_EQ(dict, expected) << dict.dump(2);
}

TEST(PatternDict, KeysWithoutCodedGroupsAreLeftOut) {
  std::vector<std::string> other = kLlamaOrder;
  std::swap(other[0], other[1]);
  auto tensors = llama_layers(kLlamaOrder, 3);
  for (const std::string& sub : other)
    tensors.push_back(bf16("model.layers.3." + sub + ".weight", 8, 8));
  // Groups: embed, layers 0-2, lm_head, layer 3 (other order). Layer 3 and lm_head fall back.
  const auto dict = dict_for(tensors, {true, true, true, true, false, false});
  const nlohmann::ordered_json expected = {
      {"model\\.embed_tokens", nlohmann::ordered_json::array()},
      {"model\\.layers\\.(?:0|1|2)", kLlamaOrder}};
  EXPECT_EQ(dict, expected) << dict.dump(2);
  // A raw block among coded ones with the same list keeps the shared key.
  const auto uniform = dict_for(llama_layers(kLlamaOrder, 3), {false, true, false, true, true});
  EXPECT_TRUE(uniform.contains("model\\.layers\\.\\d+")) << uniform.dump(2);
  EXPECT_FALSE(uniform.contains("model\\.embed_tokens")) << uniform.dump(2);
}

}  // namespace
}  // namespace df11::app
