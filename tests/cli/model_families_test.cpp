// Block detection by rule (spec 7.4) on synthetic checkpoints of the families the DF11
// ecosystem publishes: each codes at least 98% of its BF16 2-D weight bytes, its pattern_dict
// makes the loader decode every group into its members (verify's loader check), and the
// output restores byte for byte. Also: tied heads (spec 5.3 G8), F16/F32 refusal, and a
// NaN tensor leaving its block while the rest is coded.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_fixture.h"
#include "cli_process.h"

namespace df11::clitest {
namespace {

constexpr uint64_t kD = 32;  // hidden width of every synthetic model

void add(std::vector<SyntheticTensor>& t, const std::string& name, std::vector<uint64_t> shape,
         Dtype dtype = Dtype::kBF16) {
  t.push_back(SyntheticTensor{name, std::move(shape), dtype});
}
// A Linear with its bias.
void linear(std::vector<SyntheticTensor>& t, const std::string& module, uint64_t out, uint64_t in) {
  add(t, module + ".weight", {out, in});
  add(t, module + ".bias", {out});
}

class Families : public PipelineFixture {
 protected:
  // BF16 bytes of the coded members (tied copies excluded) over the BF16 2-D bytes.
  double coded_share() const {
    uint64_t matrices = 0, coded = 0;
    for (const fs::path& file : fs::directory_iterator(model())) {
      if (file.extension() != ".safetensors") continue;
      auto f = SafetensorsFile::open(file.string());
      EXPECT_TRUE(f.is_ok());
      for (const TensorInfo& t : f->header().tensors) {
        if (t.dtype == Dtype::kBF16 && t.shape.size() == 2) matrices += t.byte_size();
      }
    }
    for (const fs::path& file : fs::directory_iterator(df11())) {
      if (file.extension() != ".safetensors") continue;
      for (const GroupMeta& g : metadata_of(file).groups) {
        for (const MemberMeta& m : g.members) {
          if (m.alias_of.empty()) coded += 2 * m.n_elements;
        }
      }
    }
    return matrices ? static_cast<double>(coded) / static_cast<double>(matrices) : 0.0;
  }

  nlohmann::ordered_json pattern_dict() const {
    return read_json(df11() / "config.json")["dfloat11_config"]["pattern_dict"];
  }

  // Compress with no warning, >= 98% coded, byte-for-byte restoration, verify OK.
  // Returns compress's output (empty when it failed).
  Captured expect_family(const SyntheticCheckpoint& c) {
    write_checkpoint(model(), c);
    const Captured out = compress();
    EXPECT_EQ(out.code, 0) << out.err;
    if (out.code != 0) return {};
    EXPECT_EQ(out.err.find("warning"), std::string::npos) << out.err;
    EXPECT_GE(coded_share(), 0.98);
    const Captured d = decompress();
    EXPECT_EQ(d.code, 0) << d.err;
    EXPECT_EQ(tree_sha256(restored()), tree_sha256(model()));
    const Captured v = verify(model());
    EXPECT_EQ(v.code, 0) << v.out << v.err;
    return out;
  }
};

SyntheticCheckpoint flux_diffusers() {
  SyntheticCheckpoint c;
  c.config_json = R"({"_class_name": "FluxTransformer2DModel", "num_layers": 2})";
  auto& t = c.tensors;
  linear(t, "context_embedder", kD, 2 * kD);
  linear(t, "norm_out.linear", 2 * kD, kD);
  linear(t, "proj_out", 16, kD);
  for (int b = 0; b < 3; ++b) {
    const std::string p = "single_transformer_blocks." + std::to_string(b) + ".";
    add(t, p + "attn.norm_k.weight", {8});
    add(t, p + "attn.norm_q.weight", {8});
    for (const char* m : {"attn.to_k", "attn.to_q", "attn.to_v"}) linear(t, p + m, kD, kD);
    linear(t, p + "norm.linear", 3 * kD, kD);
    linear(t, p + "proj_mlp", 4 * kD, kD);
    linear(t, p + "proj_out", kD, 5 * kD);
  }
  linear(t, "time_text_embed.timestep_embedder.linear_1", kD, 16);
  linear(t, "time_text_embed.timestep_embedder.linear_2", kD, kD);
  for (int b = 0; b < 2; ++b) {
    const std::string p = "transformer_blocks." + std::to_string(b) + ".";
    for (const char* m : {"attn.add_k_proj", "attn.add_q_proj", "attn.add_v_proj", "attn.to_k",
                          "attn.to_out.0", "attn.to_q", "attn.to_v", "attn.to_add_out"}) {
      linear(t, p + m, kD, kD);
    }
    add(t, p + "attn.norm_added_k.weight", {8});
    linear(t, p + "ff.net.0.proj", 4 * kD, kD);
    linear(t, p + "ff.net.2", kD, 4 * kD);
    linear(t, p + "ff_context.net.0.proj", 4 * kD, kD);
    linear(t, p + "ff_context.net.2", kD, 4 * kD);
    linear(t, p + "norm1.linear", 6 * kD, kD);
    linear(t, p + "norm1_context.linear", 6 * kD, kD);
  }
  linear(t, "x_embedder", kD, 16);
  c.shards = 2;
  return c;
}

TEST_F(Families, FluxDiffusersNaming) {
  const Captured out = expect_family(flux_diffusers());
  EXPECT_EQ(out.err.find("MoE"), std::string::npos) << out.err;
  const auto dict = pattern_dict();
  ASSERT_TRUE(dict.contains("transformer_blocks\\.\\d+")) << dict.dump();
  ASSERT_TRUE(dict.contains("single_transformer_blocks\\.\\d+")) << dict.dump();
  // Members are the linear sub-modules, as diffusers names them.
  const auto members = dict["transformer_blocks\\.\\d+"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(members.begin(), members.end(), "attn.to_q"), members.end());
  EXPECT_NE(std::find(members.begin(), members.end(), "ff.net.0.proj"), members.end());
  EXPECT_TRUE(dict.contains("x_embedder")) << dict.dump();
  EXPECT_TRUE(dict.contains("proj_out")) << dict.dump();
}

TEST_F(Families, DiffusersPipelineFolder) {
  // model_index.json and components: the transformer (sharded, diffusers file names) and a
  // text encoder in BF16 are coded; an F32 VAE, the tokenizer and the scheduler are copied.
  fs::create_directories(model());
  write_text(model() / "model_index.json",
             R"({"_class_name": "FluxPipeline", "transformer": ["diffusers", )"
             R"("FluxTransformer2DModel"], "vae": ["diffusers", "AutoencoderKL"]})");
  SyntheticCheckpoint transformer = flux_diffusers();
  transformer.stem = "diffusion_pytorch_model";
  write_checkpoint(model() / "transformer", transformer);
  SyntheticCheckpoint encoder;
  encoder.config_json = R"({"architectures": ["T5EncoderModel"], "tie_word_embeddings": false})";
  add(encoder.tensors, "encoder.block.0.layer.0.SelfAttention.q.weight", {kD, kD});
  add(encoder.tensors, "encoder.block.0.layer.1.DenseReluDense.wi_0.weight", {2 * kD, kD});
  add(encoder.tensors, "shared.weight", {256, kD});
  write_checkpoint(model() / "text_encoder_2", encoder);
  SyntheticCheckpoint vae;
  vae.stem = "diffusion_pytorch_model";
  add(vae.tensors, "decoder.conv_in.weight", {kD, 4, 3, 3}, Dtype::kF32);
  add(vae.tensors, "decoder.mid_block.attentions.0.to_q.weight", {kD, kD}, Dtype::kF32);
  write_checkpoint(model() / "vae", vae);
  fs::create_directories(model() / "tokenizer");
  write_text(model() / "tokenizer" / "vocab.json", R"({"a": 0})");
  fs::create_directories(model() / "scheduler");
  write_text(model() / "scheduler" / "scheduler_config.json", R"({"shift": 3.0})");

  const Captured c = compress();
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("compressed pipeline " + model().string() + " -> " + df11().string() +
                       ": 2 components coded"),
            std::string::npos)
      << c.out;
  const auto config = read_json(df11() / "transformer" / "config.json");
  EXPECT_TRUE(config["dfloat11_config"]["pattern_dict"].contains("transformer_blocks\\.\\d+"));
  EXPECT_TRUE(read_json(df11() / "text_encoder_2" / "config.json").contains("dfloat11_config"));
  // The diffusers index is rewritten for the DF11 tensors.
  const auto index =
      read_json(df11() / "transformer" / "diffusion_pytorch_model.safetensors.index.json");
  EXPECT_TRUE(index["weight_map"].contains("transformer_blocks.0.encoded_exponent"));
  EXPECT_EQ(tree_sha256(df11() / "vae"), tree_sha256(model() / "vae"));
  EXPECT_EQ(read_text(df11() / "model_index.json"), read_text(model() / "model_index.json"));

  const Captured v = verify(model());
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  EXPECT_NE((v.out + v.err).find("pipeline: 2 coded components verified"), std::string::npos)
      << v.out << v.err;
  const Captured d = decompress();
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_NE(d.out.find("2 components restored"), std::string::npos) << d.out;
  EXPECT_EQ(tree_sha256(restored()), tree_sha256(model()));

  // inspect takes the pipeline too: every component with weights, BF16 or DF11.
  fs::create_directories(tmp_ / "logs");
  for (const fs::path& dir : {model(), df11()}) {
    const ProcessResult text = run_df11({"inspect", dir.string()}, tmp_ / "logs");
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find(dir.string() + ": diffusers pipeline (model_index.json), 3 "
                                           "components with weights: text_encoder_2, "
                                           "transformer, vae; not inspected: scheduler, "
                                           "tokenizer"),
              std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("== transformer "), std::string::npos) << text.out;
    const ProcessResult js = run_df11({"inspect", dir.string(), "--json"}, tmp_ / "logs");
    ASSERT_EQ(js.exit_code, 0) << js.err;
    const auto j = nlohmann::json::parse(js.out);
    EXPECT_EQ(j["command"], "inspect");
    EXPECT_EQ(j["kind"], "pipeline");
    ASSERT_EQ(j["components"].size(), 3u) << js.out;
    EXPECT_EQ(j["components"][1]["name"], "transformer");
    EXPECT_EQ(j["components"][1]["kind"], dir == model() ? "bf16" : "df11");
    EXPECT_FALSE(j["components"][1]["groups"].empty());
  }

  // A copied file that differs from the original's is found.
  write_text(df11() / "scheduler" / "scheduler_config.json", R"({"shift": 1.0})");
  const Captured bad = verify(model());
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("scheduler/scheduler_config.json: differs from"), std::string::npos)
      << bad.out;
}

TEST_F(Families, FluxBflNaming) {
  SyntheticCheckpoint c;
  c.config_json = "{}";
  auto& t = c.tensors;
  for (int b = 0; b < 2; ++b) {
    const std::string p = "double_blocks." + std::to_string(b) + ".";
    for (const char* s : {"img", "txt"}) {
      const std::string x = p + s;
      add(t, x + "_attn.norm.key_norm.scale", {8});
      add(t, x + "_attn.norm.query_norm.scale", {8});
      linear(t, x + "_attn.proj", kD, kD);
      linear(t, x + "_attn.qkv", 3 * kD, kD);
      linear(t, x + "_mlp.0", 4 * kD, kD);
      linear(t, x + "_mlp.2", kD, 4 * kD);
      linear(t, x + "_mod.lin", 6 * kD, kD);
    }
  }
  linear(t, "final_layer.adaLN_modulation.1", 2 * kD, kD);
  linear(t, "final_layer.linear", 16, kD);
  linear(t, "guidance_in.in_layer", kD, 16);
  linear(t, "img_in", kD, 16);
  for (int b = 0; b < 3; ++b) {
    const std::string p = "single_blocks." + std::to_string(b) + ".";
    linear(t, p + "linear1", 7 * kD, kD);
    linear(t, p + "linear2", kD, 5 * kD);
    linear(t, p + "modulation.lin", 3 * kD, kD);
    add(t, p + "norm.key_norm.scale", {8});
  }
  linear(t, "time_in.in_layer", kD, 16);
  linear(t, "txt_in", kD, 2 * kD);
  linear(t, "vector_in.in_layer", kD, 2 * kD);
  expect_family(c);
  const auto dict = pattern_dict();
  EXPECT_TRUE(dict.contains("double_blocks\\.\\d+")) << dict.dump();
  EXPECT_EQ(dict["single_blocks\\.\\d+"],
            (std::vector<std::string>{"linear1", "linear2", "modulation.lin"}));
  // A numbered module that is itself the weight's module is a module group.
  EXPECT_TRUE(dict.contains("final_layer\\.adaLN_modulation\\.1")) << dict.dump();
}

TEST_F(Families, Sd3Style) {
  SyntheticCheckpoint c;
  c.config_json = R"({"_class_name": "SD3Transformer2DModel"})";
  auto& t = c.tensors;
  linear(t, "context_embedder", kD, 2 * kD);
  linear(t, "norm_out.linear", 2 * kD, kD);
  add(t, "pos_embed.pos_embed", {1, 16, kD});
  add(t, "pos_embed.proj.weight", {kD, 4, 2, 2});
  linear(t, "proj_out", 16, kD);
  linear(t, "time_text_embed.text_embedder.linear_1", kD, 2 * kD);
  linear(t, "time_text_embed.timestep_embedder.linear_1", kD, 16);
  for (int b = 0; b < 3; ++b) {
    const std::string p = "transformer_blocks." + std::to_string(b) + ".";
    for (const char* m : {"attn.add_k_proj", "attn.add_q_proj", "attn.add_v_proj", "attn.to_k",
                          "attn.to_q", "attn.to_v", "attn.to_out.0"}) {
      linear(t, p + m, kD, kD);
    }
    if (b < 2) linear(t, p + "attn.to_add_out", kD, kD);  // the last block has no context out
    linear(t, p + "ff.net.0.proj", 4 * kD, kD);
    linear(t, p + "ff.net.2", kD, 4 * kD);
    if (b < 2) {
      linear(t, p + "ff_context.net.0.proj", 4 * kD, kD);
      linear(t, p + "ff_context.net.2", kD, 4 * kD);
    }
    linear(t, p + "norm1.linear", 6 * kD, kD);
    linear(t, p + "norm1_context.linear", (b < 2 ? 6 : 2) * kD, kD);
  }
  expect_family(c);
  // The last block's member list differs: its layer numbers get their own key.
  const auto dict = pattern_dict();
  EXPECT_TRUE(dict.contains("transformer_blocks\\.(?:0|1)")) << dict.dump();
  EXPECT_TRUE(dict.contains("transformer_blocks\\.(?:2)")) << dict.dump();
}

TEST_F(Families, SdxlUnetStyle) {
  SyntheticCheckpoint c;
  c.config_json = R"({"_class_name": "UNet2DConditionModel"})";
  auto& t = c.tensors;
  linear(t, "add_embedding.linear_1", 4 * kD, 2 * kD);
  add(t, "conv_in.weight", {kD, 4, 3, 3});
  auto transformer = [&](const std::string& p) {
    add(t, p + "norm.weight", {kD});
    linear(t, p + "proj_in", kD, kD);
    for (int k = 0; k < 2; ++k) {
      const std::string b = p + "transformer_blocks." + std::to_string(k) + ".";
      for (const char* m : {"attn1.to_k", "attn1.to_q", "attn1.to_v", "attn1.to_out.0",
                            "attn2.to_q", "attn2.to_out.0"}) {
        linear(t, b + m, kD, kD);
      }
      add(t, b + "attn2.to_k.weight", {kD, 2 * kD});
      add(t, b + "attn2.to_v.weight", {kD, 2 * kD});
      linear(t, b + "ff.net.0.proj", 8 * kD, kD);
      linear(t, b + "ff.net.2", kD, 4 * kD);
    }
    linear(t, p + "proj_out", kD, kD);
  };
  auto resnet = [&](const std::string& p) {
    add(t, p + "conv1.weight", {kD, kD, 3, 3});
    linear(t, p + "time_emb_proj", kD, 4 * kD);
  };
  resnet("down_blocks.0.resnets.0.");
  for (int j = 0; j < 2; ++j) {
    transformer("down_blocks.1.attentions." + std::to_string(j) + ".");
    resnet("down_blocks.1.resnets." + std::to_string(j) + ".");
  }
  transformer("mid_block.attentions.0.");
  resnet("mid_block.resnets.0.");
  linear(t, "time_embedding.linear_1", 4 * kD, kD);
  transformer("up_blocks.0.attentions.0.");
  resnet("up_blocks.0.resnets.0.");
  expect_family(c);
  const auto dict = pattern_dict();
  // down_blocks.0 and .1 hold different modules: alternation keys.
  EXPECT_TRUE(dict.contains("down_blocks\\.(?:0)")) << dict.dump();
  EXPECT_TRUE(dict.contains("mid_block\\.attentions\\.\\d+")) << dict.dump();
}

TEST_F(Families, WanStyle) {
  SyntheticCheckpoint c;
  c.config_json = R"({"_class_name": "WanTransformer3DModel"})";
  auto& t = c.tensors;
  for (int b = 0; b < 3; ++b) {
    const std::string p = "blocks." + std::to_string(b) + ".";
    for (const char* m : {"attn1.to_k", "attn1.to_out.0", "attn1.to_q", "attn1.to_v", "attn2.to_k",
                          "attn2.to_out.0", "attn2.to_q", "attn2.to_v"}) {
      linear(t, p + m, kD, kD);
    }
    linear(t, p + "ffn.net.0.proj", 4 * kD, kD);
    linear(t, p + "ffn.net.2", kD, 4 * kD);
    add(t, p + "scale_shift_table", {1, 6, kD});
  }
  linear(t, "condition_embedder.text_embedder.linear_1", kD, 2 * kD);
  linear(t, "condition_embedder.time_embedder.linear_1", kD, 8);
  linear(t, "condition_embedder.time_proj", 6 * kD, kD);
  add(t, "patch_embedding.weight", {kD, 16, 1, 2, 2});
  linear(t, "proj_out", 64, kD);
  expect_family(c);
  EXPECT_TRUE(pattern_dict().contains("blocks\\.\\d+")) << pattern_dict().dump();
}

TEST_F(Families, Gpt2TiedToWte) {
  SyntheticCheckpoint c;
  // No tie_word_embeddings key: transformers ties by default for an LM head model.
  c.config_json = R"({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
                      "vocab_size": 256})";
  auto& t = c.tensors;
  for (int b = 0; b < 3; ++b) {
    const std::string p = "transformer.h." + std::to_string(b) + ".";
    linear(t, p + "attn.c_attn", kD, 3 * kD);  // Conv1D: (in, out)
    linear(t, p + "attn.c_proj", kD, kD);
    add(t, p + "ln_1.weight", {kD});
    linear(t, p + "mlp.c_fc", kD, 4 * kD);
    linear(t, p + "mlp.c_proj", 4 * kD, kD);
  }
  add(t, "transformer.ln_f.weight", {kD});
  add(t, "transformer.wpe.weight", {64, kD});
  add(t, "transformer.wte.weight", {256, kD});
  expect_family(c);
  const auto dict = pattern_dict();
  EXPECT_TRUE(dict.contains("transformer\\.h\\.\\d+")) << dict.dump();
  EXPECT_TRUE(dict.contains("transformer\\.wte")) << dict.dump();
  EXPECT_TRUE(dict.contains("transformer\\.wpe")) << dict.dump();
  EXPECT_EQ(dict["lm_head"], nlohmann::ordered_json::array()) << dict.dump();
  bool found = false;
  for (const GroupMeta& g : metadata_of(df11() / "model.safetensors").groups) {
    if (g.name != "lm_head") continue;
    found = true;
    ASSERT_EQ(g.members.size(), 1u);
    EXPECT_EQ(g.members[0].name, "lm_head.weight");
    EXPECT_EQ(g.members[0].alias_of, "transformer.wte.weight");
  }
  EXPECT_TRUE(found);
}

TEST_F(Families, T5) {
  SyntheticCheckpoint c;
  c.config_json = R"({"architectures": ["T5ForConditionalGeneration"], "model_type": "t5",
                      "tie_word_embeddings": false, "vocab_size": 256})";
  auto& t = c.tensors;
  for (const char* stack : {"decoder", "encoder"}) {
    for (int b = 0; b < 2; ++b) {
      const std::string p = std::string(stack) + ".block." + std::to_string(b) + ".layer.";
      for (const char* m : {"k", "o", "q", "v"}) {
        add(t, p + "0.SelfAttention." + m + ".weight", {kD, kD});
      }
      if (b == 0) add(t, p + "0.SelfAttention.relative_attention_bias.weight", {32, 4});
      add(t, p + "0.layer_norm.weight", {kD});
      const std::string ff = std::string(stack) == "decoder" ? "2" : "1";
      if (ff == "2") {
        for (const char* m : {"k", "o", "q", "v"}) {
          add(t, p + "1.EncDecAttention." + m + ".weight", {kD, kD});
        }
      }
      add(t, p + ff + ".DenseReluDense.wi_0.weight", {2 * kD, kD});
      add(t, p + ff + ".DenseReluDense.wo.weight", {kD, 2 * kD});
    }
    add(t, std::string(stack) + ".final_layer_norm.weight", {kD});
  }
  add(t, "lm_head.weight", {256, kD});
  add(t, "shared.weight", {256, kD});
  expect_family(c);
  const auto dict = pattern_dict();
  EXPECT_TRUE(dict.contains("shared")) << dict.dump();
  EXPECT_TRUE(dict.contains("lm_head")) << dict.dump();
  // The relative attention bias is an nn.Embedding: a module group, not a block member.
  EXPECT_TRUE(
      dict.contains("encoder\\.block\\.0\\.layer\\.0\\.SelfAttention\\.relative_attention_bias"))
      << dict.dump();
}

SyntheticCheckpoint mixtral(int layers, int experts) {
  SyntheticCheckpoint c;
  c.config_json = R"({"architectures": ["MixtralForCausalLM"], "model_type": "mixtral",
                      "tie_word_embeddings": false, "vocab_size": 256})";
  auto& t = c.tensors;
  add(t, "lm_head.weight", {256, kD});
  add(t, "model.embed_tokens.weight", {256, kD});
  for (int l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    for (int e = 0; e < experts; ++e) {
      const std::string x = p + "block_sparse_moe.experts." + std::to_string(e) + ".";
      add(t, x + "w1.weight", {2 * kD, kD});
      add(t, x + "w2.weight", {kD, 2 * kD});
      add(t, x + "w3.weight", {2 * kD, kD});
    }
    add(t, p + "block_sparse_moe.gate.weight", {static_cast<uint64_t>(experts), kD});
    add(t, p + "input_layernorm.weight", {kD});
    for (const char* m : {"k_proj", "o_proj", "q_proj", "v_proj"}) {
      add(t, p + "self_attn." + m + ".weight", {kD, kD});
    }
  }
  add(t, "model.norm.weight", {kD});
  c.shards = 2;
  return c;
}

TEST_F(Families, Mixtral8x22bShaped) {
  // Eight experts per layer as in Mixtral-8x22B; the 2^31 - 1 limit's split is proven at
  // the planning level (grouping_test: SplitsMoeLayerAboveTheLimitPerExpert).
  const Captured out = expect_family(mixtral(2, 8));
  EXPECT_TRUE(pattern_dict().contains("model\\.layers\\.\\d+")) << pattern_dict().dump();
  // Per-expert members: the note says which transformers the official loader needs.
  EXPECT_NE(out.err.find("note: MoE experts are coded per expert"), std::string::npos) << out.err;
  EXPECT_NE(out.err.find("transformers 4"), std::string::npos) << out.err;
}

TEST_F(Families, F16AndF32CheckpointsAreRefused) {
  for (const Dtype dtype : {Dtype::kF16, Dtype::kF32}) {
    fs::remove_all(model());
    SyntheticCheckpoint c;
    add(c.tensors, "model.layers.0.mlp.up_proj.weight", {kD, kD}, dtype);
    add(c.tensors, "model.norm.weight", {kD}, Dtype::kF32);
    write_checkpoint(model(), c);
    const Captured out = compress();
    EXPECT_EQ(out.code, 1) << out.err;
    EXPECT_NE(out.err.find("no BF16 weights"), std::string::npos) << out.err;
    EXPECT_NE(out.err.find(dtype_name(dtype)), std::string::npos) << out.err;
    EXPECT_NE(out.err.find("not be lossless"), std::string::npos) << out.err;
    EXPECT_FALSE(fs::exists(df11()));
    EXPECT_EQ(list_dir(tmp_.path()), std::vector<std::string>{"model"});
  }
}

TEST_F(Families, NanTensorLeavesItsBlockTheRestIsCoded) {
  SyntheticCheckpoint c = mixtral(2, 2);
  c.nan_tensor = "model.layers.1.block_sparse_moe.experts.0.w2.weight";
  write_checkpoint(model(), c);
  const Captured out = compress();
  ASSERT_EQ(out.code, 0) << out.err;
  EXPECT_NE(out.err.find("'" + c.nan_tensor + "' (1 weight) hold Inf, NaN"), std::string::npos)
      << out.err;
  EXPECT_NE(out.err.find("stored unchanged on their own"), std::string::npos) << out.err;
  // Everything but that tensor is coded; its layer is still a group.
  uint64_t nan_bytes = 2 * 2 * kD * kD, matrices = 0;
  for (const SyntheticTensor& t : c.tensors) {
    if (t.shape.size() == 2) matrices += 2 * t.shape[0] * t.shape[1];
  }
  const double expected = static_cast<double>(matrices - nan_bytes) / static_cast<double>(matrices);
  EXPECT_NEAR(coded_share(), expected, 1e-9);
  const auto dict = pattern_dict();
  EXPECT_TRUE(dict.contains("model\\.layers\\.(?:0)")) << dict.dump();
  EXPECT_TRUE(dict.contains("model\\.layers\\.(?:1)")) << dict.dump();
  const Captured d = decompress();
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(tree_sha256(restored()), tree_sha256(model()));
  EXPECT_EQ(verify(model()).code, 0);
}

TEST_F(Families, LowCoverageWarnsNamingTheLargestUncodedTensors) {
  SyntheticCheckpoint c;
  add(c.tensors, "model.layers.0.mlp.up_proj.weight", {kD, kD});
  add(c.tensors, "model.experts_stacked", {64, kD});  // a parameter, not a module's weight
  write_checkpoint(model(), c);
  const Captured out = compress();
  ASSERT_EQ(out.code, 0) << out.err;
  EXPECT_NE(out.err.find("only 33.3% of the BF16 2-D weight bytes are coded"), std::string::npos)
      << out.err;
  EXPECT_NE(out.err.find("'model.experts_stacked' (4.1 kB: not named '<module>.weight')"),
            std::string::npos)
      << out.err;
}

}  // namespace
}  // namespace df11::clitest
