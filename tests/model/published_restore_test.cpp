// Folders written by the official encoder (dfloat11 0.5.0's compress_model, on the GPU
// machine: tests/interop/fixtures/README.md) restored by decompress and checked by
// verify --against: shapes from config.json (Qwen3 tied, Phi-3 fused projections, the FLUX
// transformer), from --like, and the error for an unknown architecture. MemberShapes is
// also tested alone for every family spec 7.8 lists.
#include <gtest/gtest.h>

#include "cli_fixture.h"
#include "df11/member_shapes.h"

namespace df11::clitest {
namespace {

using app::MemberShapes;

const fs::path kFixtures = fs::path(DF11_SOURCE_DIR) / "tests" / "interop" / "fixtures";

class OfficialFolder : public PipelineFixture {
 protected:
  // A copy of fixture `family`'s official/ (or `variant`; the test may edit it) as df11().
  void use(const std::string& family, const std::string& variant = "official") {
    fs::copy(kFixtures / family / variant, df11(), fs::copy_options::recursive);
    original_ = kFixtures / family / "bf16";
  }
  Captured restore(const std::optional<fs::path>& like = std::nullopt) const {
    DecompressOptions o;
    o.df11_dir = df11();
    o.out_dir = restored();
    o.like = like;
    std::ostringstream out, err;
    const int code = app::run_decompress_command(o, {}, out, err);
    return {code, out.str(), err.str()};
  }
  // verify --against the original passes, saying `compared` ("21 tensors compared bit for bit").
  void expect_verified(const std::string& compared) const {
    const Captured v = verify(original_);
    EXPECT_EQ(v.code, 0) << v.out << v.err;
    EXPECT_NE(v.out.find(compared), std::string::npos) << v.out;
  }
  fs::path original_;
};

// The official encoder stores the tied head as a group of its own; the original holds the
// embedding only. verify compares the head with the embedding, and decompress gives back the
// original's tensors: the head is left out because config.json ties it and it decodes the same.
TEST_F(OfficialFolder, TiedQwen3VerifiesAgainstTheOriginalAndRestoresItsTensors) {
  use("qwen3");
  expect_verified("25 tensors compared bit for bit");
  const Captured d = restore();
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_NE(d.err.find("'lm_head.weight' decodes identically to 'model.embed_tokens.weight'"),
            std::string::npos)
      << d.err;
  expect_same_tensors(restored(), original_);
  EXPECT_EQ(read_json(restored() / "config.json"), read_json(original_ / "config.json"));
}

// A head that differs from the embedding it is said to be tied to fails verify, naming it.
TEST_F(OfficialFolder, TiedHeadThatDiffersFromTheEmbeddingFailsVerify) {
  use("qwen3");
  const uint64_t sign = tensor_file_offset(df11() / "model.safetensors", "lm_head.sign_mantissa");
  flip_byte(df11() / "model.safetensors", sign + 5, 0x80);
  const Captured v = verify(original_);
  EXPECT_EQ(v.code, 1) << v.out << v.err;
  EXPECT_NE(v.out.find("model.embed_tokens.weight"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("group 'lm_head'"), std::string::npos) << v.out;
  // decompress keeps both, and says why.
  const Captured d = restore();
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_NE(d.err.find("but they differ here: both are restored"), std::string::npos) << d.err;
  auto folder = app::open_model_folder(restored());
  ASSERT_TRUE(folder.is_ok());
  EXPECT_EQ(folder->tensors.count("lm_head.weight"), 1u);
}

TEST_F(OfficialFolder, Phi3FusedProjectionsRestoreWithShapesFromConfig) {
  use("phi3");
  ASSERT_EQ(verify(original_).code, 0);
  const Captured d = restore();
  ASSERT_EQ(d.code, 0) << d.err;
  expect_same_tensors(restored(), original_);
}

// Made under transformers 4 (one module per expert, as the DFloat11 hub's MoE models are): each
// layer's group holds the attention and every expert's gate/up/down projection.
TEST_F(OfficialFolder, Qwen3MoeExpertsRestoreWithShapesFromConfig) {
  use("qwen3moe");
  const Captured v = verify(original_);
  ASSERT_EQ(v.code, 0) << v.out << v.err;
  const Captured d = restore();
  ASSERT_EQ(d.code, 0) << d.err;
  expect_same_tensors(restored(), original_);
}

TEST_F(OfficialFolder, FluxTransformerRestoresWithShapesFromConfig) {
  use("flux");
  ASSERT_EQ(verify(original_).code, 0);
  const Captured d = restore();
  ASSERT_EQ(d.code, 0) << d.err;
  expect_same_tensors(restored(), original_);
  EXPECT_TRUE(fs::exists(restored() / "diffusion_pytorch_model.safetensors"));
  EXPECT_FALSE(read_json(restored() / "config.json").contains("dfloat11_config"));
}

// The official encoder's other output (save_single_file=False, the official-modules fixture):
// each coded module's group and other tensors (a block's norms) in a file of its own, the rest
// in model.safetensors, no index. verify finds every group across the files; decompress
// restores the original's tensors (with an index, so that transformers reads every file).
TEST_F(OfficialFolder, ModuleFilesVerifyAndRestore) {
  use("llama", "official-modules");
  expect_verified("21 tensors compared bit for bit");
  const Captured d = restore();
  ASSERT_EQ(d.code, 0) << d.err;
  expect_same_tensors(restored(), original_);
  EXPECT_TRUE(fs::exists(restored() / "model.safetensors.index.json"));
}

// The same output for a diffusers transformer (FLUX, with the pattern_dict of the dfloat11
// project's FLUX example, whose default it is): a file per coded block, the other tensors in
// diffusion_pytorch_model.safetensors, config.json holding dfloat11_config alone. verify
// decodes every group against the original; decompress --like the original restores it.
TEST_F(OfficialFolder, DiffusersModuleFilesVerifyAndRestoreLikeTheOriginal) {
  use("flux", "official-modules");
  ASSERT_EQ(read_json(df11() / "config.json").size(), 1u);
  expect_verified("80 tensors compared bit for bit");
  const Captured d = restore(original_);
  ASSERT_EQ(d.code, 0) << d.err;
  expect_same_tensors(restored(), original_);
}

// Wan's: the encoder stored the model diffusers loaded, whose _keep_in_fp32_modules (time
// embedding, norms, modulation tables) diffusers upcast to F32. verify names each of those
// tensors, F32 in the folder where the original holds BF16, and nothing else.
TEST_F(OfficialFolder, WanModuleFilesHoldTheFloat32ModulesDiffusersLoaded) {
  use("wan", "official-modules");
  const Captured v = verify(original_);
  EXPECT_EQ(v.code, 1) << v.out << v.err;
  EXPECT_NE(v.out.find("FAIL tensor 'condition_embedder.time_embedder.linear_1.weight': F32 "
                       "[24, 16] here, BF16 [24, 16]"),
            std::string::npos)
      << v.out;
  EXPECT_NE(v.out.find("FAILED: 11 problems; 2 groups decoded"), std::string::npos) << v.out;
}

// What the official encoder itself writes (save_single_file=True, the official-single
// fixture): a config.json holding dfloat11_config alone. No architecture: the error names the
// weights and suggests --like; --like the original restores them (the tied head takes the
// embedding's shape). verify needs no shapes: it decodes every group and compares each
// member with the original's tensor of the same name.
TEST_F(OfficialFolder, BareConfigNeedsLike) {
  use("qwen3", "official-single");
  ASSERT_EQ(read_json(df11() / "config.json").size(), 1u);
  expect_verified("25 tensors compared bit for bit");
  const Captured d = restore();
  EXPECT_EQ(d.code, 3) << d.err;
  EXPECT_NE(d.err.find("the shapes of 16 coded weights are unknown (config.json holds no "
                       "model config, only dfloat11_config): 'lm_head.weight', "
                       "'model.embed_tokens.weight'"),
            std::string::npos)
      << d.err;
  EXPECT_NE(d.err.find("pass --like DIR"), std::string::npos) << d.err;
  EXPECT_FALSE(fs::exists(restored()));

  const Captured like = restore(original_);
  ASSERT_EQ(like.code, 0) << like.err;
  EXPECT_NE(like.err.find("the restored folder has no config.json"), std::string::npos);
  // The original stores no lm_head.weight; here it is kept (config.json no longer says tied).
  auto folder = app::open_model_folder(restored());
  ASSERT_TRUE(folder.is_ok());
  EXPECT_EQ(folder->tensors.count("lm_head.weight"), 1u);
  EXPECT_EQ(folder->tensor(folder->tensors.at("lm_head.weight")).shape,
            (std::vector<uint64_t>{512, 64}));
}

// A config.json whose dimensions disagree with what the groups hold is refused, naming the
// weight, before anything is written.
TEST_F(OfficialFolder, WrongConfigDimensionsAreRefused) {
  use("phi3");
  nlohmann::ordered_json config = read_json(df11() / "config.json");
  config["intermediate_size"] = 128;
  write_text(df11() / "config.json", config.dump(2));
  const Captured d = restore();
  EXPECT_EQ(d.code, 1) << d.err;
  EXPECT_NE(d.err.find("member 'model.layers.0.mlp.gate_up_proj.weight' holds 20480 weights, "
                       "its shape [256, 64]"),
            std::string::npos)
      << d.err;
  EXPECT_FALSE(fs::exists(restored()));
}

// --like is for published folders only: a df11 folder records its shapes.
TEST_F(OfficialFolder, LikeOnADf11FolderIsRefused) {
  write_tiny_llama(model(), {});
  ASSERT_EQ(compress().code, 0);
  DecompressOptions o;
  o.df11_dir = df11();
  o.out_dir = restored();
  o.like = model();
  std::ostringstream out, err;
  EXPECT_EQ(app::run_decompress_command(o, {}, out, err), 2);
  EXPECT_NE(err.str().find("--like is for folders published by the dfloat11 tools"),
            std::string::npos)
      << err.str();
}

MemberShapes shapes_of(const nlohmann::json& config) {
  auto shapes = MemberShapes::from_config(config.dump());
  EXPECT_TRUE(shapes.is_ok()) << shapes.status().to_string();
  return std::move(shapes).value();
}

using Shape = std::vector<uint64_t>;

// Dimensions as the families' published config.json files give them (the numbers of the
// real models, so that a fused or grouped-query layout shows).
TEST(MemberShapesTest, LlamaMistralQwen2Qwen3) {
  const nlohmann::json llama = {{"model_type", "llama"},      {"hidden_size", 4096},
                                {"intermediate_size", 14336}, {"num_attention_heads", 32},
                                {"num_key_value_heads", 8},   {"vocab_size", 128256}};
  for (const char* type : {"llama", "mistral", "qwen2"}) {
    nlohmann::json c = llama;
    c["model_type"] = type;
    const MemberShapes s = shapes_of(c);
    EXPECT_EQ(s.family(), type);
    EXPECT_EQ(s.shape_of("model.embed_tokens.weight"), (Shape{128256, 4096}));
    EXPECT_EQ(s.shape_of("lm_head.weight"), (Shape{128256, 4096}));
    EXPECT_EQ(s.shape_of("model.layers.31.self_attn.q_proj.weight"), (Shape{4096, 4096}));
    EXPECT_EQ(s.shape_of("model.layers.0.self_attn.k_proj.weight"), (Shape{1024, 4096}));
    EXPECT_EQ(s.shape_of("model.layers.0.self_attn.v_proj.weight"), (Shape{1024, 4096}));
    EXPECT_EQ(s.shape_of("model.layers.0.self_attn.o_proj.weight"), (Shape{4096, 4096}));
    EXPECT_EQ(s.shape_of("model.layers.0.mlp.gate_proj.weight"), (Shape{14336, 4096}));
    EXPECT_EQ(s.shape_of("model.layers.0.mlp.up_proj.weight"), (Shape{14336, 4096}));
    EXPECT_EQ(s.shape_of("model.layers.0.mlp.down_proj.weight"), (Shape{4096, 14336}));
    EXPECT_EQ(s.shape_of("model.layers.0.input_layernorm.weight"), std::nullopt);
  }
  // Qwen3-4B: head_dim 128 with 32 heads on a 2560 hidden size (q is wider than hidden).
  const MemberShapes q3 = shapes_of({{"model_type", "qwen3"},
                                     {"hidden_size", 2560},
                                     {"intermediate_size", 9728},
                                     {"num_attention_heads", 32},
                                     {"num_key_value_heads", 8},
                                     {"head_dim", 128},
                                     {"vocab_size", 151936},
                                     {"tie_word_embeddings", true}});
  EXPECT_EQ(q3.shape_of("model.layers.3.self_attn.q_proj.weight"), (Shape{4096, 2560}));
  EXPECT_EQ(q3.shape_of("model.layers.3.self_attn.o_proj.weight"), (Shape{2560, 4096}));
  EXPECT_EQ(q3.shape_of("model.layers.3.self_attn.k_proj.weight"), (Shape{1024, 2560}));
}

TEST(MemberShapesTest, Qwen3MoeAndMixtralExperts) {
  const MemberShapes moe = shapes_of({{"model_type", "qwen3_moe"},
                                      {"hidden_size", 2048},
                                      {"intermediate_size", 6144},
                                      {"moe_intermediate_size", 768},
                                      {"num_experts", 128},
                                      {"num_attention_heads", 32},
                                      {"num_key_value_heads", 4},
                                      {"head_dim", 128},
                                      {"vocab_size", 151936}});
  EXPECT_EQ(moe.shape_of("model.layers.0.mlp.experts.127.gate_proj.weight"), (Shape{768, 2048}));
  EXPECT_EQ(moe.shape_of("model.layers.0.mlp.experts.5.down_proj.weight"), (Shape{2048, 768}));
  EXPECT_EQ(moe.shape_of("model.layers.0.mlp.gate.weight"), (Shape{128, 2048}));
  EXPECT_EQ(moe.shape_of("model.layers.0.self_attn.q_proj.weight"), (Shape{4096, 2048}));
  const MemberShapes mixtral = shapes_of({{"model_type", "mixtral"},
                                          {"hidden_size", 4096},
                                          {"intermediate_size", 14336},
                                          {"num_local_experts", 8},
                                          {"num_attention_heads", 32},
                                          {"num_key_value_heads", 8},
                                          {"vocab_size", 32000}});
  EXPECT_EQ(mixtral.shape_of("model.layers.1.block_sparse_moe.experts.7.w1.weight"),
            (Shape{14336, 4096}));
  EXPECT_EQ(mixtral.shape_of("model.layers.1.block_sparse_moe.experts.7.w2.weight"),
            (Shape{4096, 14336}));
  EXPECT_EQ(mixtral.shape_of("model.layers.1.block_sparse_moe.gate.weight"), (Shape{8, 4096}));
}

TEST(MemberShapesTest, GemmaTextAndMultimodalWrapper) {
  const nlohmann::json text = {{"model_type", "gemma3_text"}, {"hidden_size", 2560},
                               {"intermediate_size", 10240},  {"num_attention_heads", 8},
                               {"num_key_value_heads", 4},    {"head_dim", 256},
                               {"vocab_size", 262208}};
  EXPECT_EQ(shapes_of(text).shape_of("model.layers.0.self_attn.q_proj.weight"),
            (Shape{2048, 2560}));
  nlohmann::json gemma2 = text;
  gemma2["model_type"] = "gemma2";
  EXPECT_EQ(shapes_of(gemma2).family(), "gemma2");
  // Gemma 3 4B and up: the language model's dimensions sit in text_config.
  const MemberShapes mm = shapes_of({{"model_type", "gemma3"}, {"text_config", text}});
  EXPECT_EQ(mm.family(), "gemma3_text");
  EXPECT_EQ(mm.shape_of("language_model.model.layers.2.mlp.down_proj.weight"),
            (Shape{2560, 10240}));
  EXPECT_EQ(mm.shape_of("model.language_model.layers.2.self_attn.q_proj.weight"),
            (Shape{2048, 2560}));
  EXPECT_EQ(mm.shape_of("lm_head.weight"), (Shape{262208, 2560}));
  EXPECT_EQ(mm.shape_of("vision_tower.vision_model.encoder.layers.0.self_attn.q_proj.weight"),
            std::nullopt);
}

TEST(MemberShapesTest, Phi3FusedProjections) {
  // Phi-3-mini: 32 heads of 96 on 3072, no grouped-query attention.
  const MemberShapes s = shapes_of({{"model_type", "phi3"},
                                    {"hidden_size", 3072},
                                    {"intermediate_size", 8192},
                                    {"num_attention_heads", 32},
                                    {"num_key_value_heads", 32},
                                    {"vocab_size", 32064}});
  EXPECT_EQ(s.shape_of("model.layers.0.self_attn.qkv_proj.weight"), (Shape{9216, 3072}));
  EXPECT_EQ(s.shape_of("model.layers.0.mlp.gate_up_proj.weight"), (Shape{16384, 3072}));
  EXPECT_EQ(s.shape_of("model.layers.0.mlp.down_proj.weight"), (Shape{3072, 8192}));
}

TEST(MemberShapesTest, FluxTransformer) {
  // FLUX.1-dev's transformer config.json.
  const MemberShapes s = shapes_of({{"_class_name", "FluxTransformer2DModel"},
                                    {"attention_head_dim", 128},
                                    {"num_attention_heads", 24},
                                    {"in_channels", 64},
                                    {"joint_attention_dim", 4096},
                                    {"pooled_projection_dim", 768},
                                    {"patch_size", 1}});
  EXPECT_EQ(s.family(), "flux");
  EXPECT_EQ(s.shape_of("transformer_blocks.18.norm1.linear.weight"), (Shape{18432, 3072}));
  EXPECT_EQ(s.shape_of("transformer_blocks.0.attn.to_out.0.weight"), (Shape{3072, 3072}));
  EXPECT_EQ(s.shape_of("transformer_blocks.0.ff.net.0.proj.weight"), (Shape{12288, 3072}));
  EXPECT_EQ(s.shape_of("transformer_blocks.0.ff_context.net.2.weight"), (Shape{3072, 12288}));
  EXPECT_EQ(s.shape_of("single_transformer_blocks.37.proj_out.weight"), (Shape{3072, 15360}));
  EXPECT_EQ(s.shape_of("single_transformer_blocks.0.norm.linear.weight"), (Shape{9216, 3072}));
  EXPECT_EQ(s.shape_of("x_embedder.weight"), (Shape{3072, 64}));
  EXPECT_EQ(s.shape_of("context_embedder.weight"), (Shape{3072, 4096}));
  EXPECT_EQ(s.shape_of("transformer_blocks.0.attn.norm_q.weight"), std::nullopt);
}

TEST(MemberShapesTest, UnknownArchitectureAndBadConfig) {
  const MemberShapes gpt2 = shapes_of({{"model_type", "gpt2"}, {"n_embd", 768}});
  EXPECT_TRUE(gpt2.family().empty());
  EXPECT_EQ(gpt2.shape_of("transformer.h.0.attn.c_attn.weight"), std::nullopt);
  EXPECT_EQ(MemberShapes::from_config(std::string("[1, 2]")).status().code(),
            ErrorCode::kBadConfig);
  EXPECT_TRUE(MemberShapes::from_config(std::nullopt).is_ok());
}

TEST(MemberShapesTest, TiedEmbedding) {
  const std::vector<std::string> names = {"lm_head.weight", "model.embed_tokens.weight",
                                          "model.norm.weight"};
  const std::string tied = R"({"tie_word_embeddings": true})";
  EXPECT_EQ(app::tied_embedding_of("lm_head.weight", tied, names), "model.embed_tokens.weight");
  EXPECT_EQ(app::tied_embedding_of("lm_head.weight", std::nullopt, names),
            "model.embed_tokens.weight");
  EXPECT_EQ(app::tied_embedding_of("lm_head.weight", R"({"tie_word_embeddings": false})", names),
            std::nullopt);
  EXPECT_EQ(app::tied_embedding_of("model.norm.weight", tied, names), std::nullopt);
  EXPECT_EQ(app::tied_embedding_of("language_model.lm_head.weight", tied,
                                   {"language_model.model.embed_tokens.weight",
                                    "vision_tower.embeddings.patch_embedding.weight"}),
            "language_model.model.embed_tokens.weight");
  EXPECT_TRUE(app::config_ties_embeddings(tied));
  EXPECT_FALSE(app::config_ties_embeddings(std::nullopt));
}

}  // namespace
}  // namespace df11::clitest
