#include "mkmodel/llama_layout.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace df11::mkmodel {
namespace {

// The transformers release whose file layout the side files imitate.
constexpr const char* kTransformersVersion = "4.44.0";

TensorSpec linear(std::string name, uint64_t out_features, uint64_t in_features) {
  TensorSpec t;
  t.name = std::move(name);
  t.shape = {out_features, in_features};
  t.std = static_cast<float>(1.0 / std::sqrt(static_cast<double>(in_features)));
  return t;
}

TensorSpec norm(std::string name, uint64_t hidden) {
  TensorSpec t;
  t.name = std::move(name);
  t.shape = {hidden};
  t.init = InitKind::kNorm;
  return t;
}

}  // namespace

Status validate_dims(const LlamaDims& d) {
  if (d.layers == 0 || d.hidden == 0 || d.intermediate == 0 || d.vocab == 0 || d.heads == 0 ||
      d.kv_heads == 0) {
    return Status(ErrorCode::kInvalidArgument, "every dimension must be at least 1");
  }
  if (d.hidden % d.heads != 0) {
    return Status(ErrorCode::kInvalidArgument, "hidden size " + std::to_string(d.hidden) +
                                                   " is not a multiple of " +
                                                   std::to_string(d.heads) + " heads");
  }
  if (d.head_dim() % 2 != 0) {
    return Status(ErrorCode::kInvalidArgument,
                  "head dimension " + std::to_string(d.head_dim()) +
                      " must be even (rotary embeddings pair dimensions)");
  }
  if (d.heads % d.kv_heads != 0) {
    return Status(ErrorCode::kInvalidArgument, "heads must be a multiple of key/value heads");
  }
  // Keep every byte count far from overflow: 2^20 per dimension bounds a tensor by 2^41 bytes.
  constexpr uint64_t kMaxDim = uint64_t{1} << 20;
  if (d.hidden > kMaxDim || d.intermediate > kMaxDim || d.vocab > kMaxDim || d.layers > 100000) {
    return Status(ErrorCode::kInvalidArgument, "dimensions beyond 2^20 (or > 100000 layers)");
  }
  return Status::ok();
}

uint64_t TensorSpec::n_elements() const {
  uint64_t n = 1;
  for (const uint64_t s : shape) n *= s;
  return n;
}

std::vector<TensorSpec> llama_tensors(const LlamaDims& d) {
  const uint64_t h = d.hidden;
  const uint64_t kv = d.kv_heads * d.head_dim();
  std::vector<TensorSpec> out;
  out.push_back(linear("model.embed_tokens.weight", d.vocab, h));
  for (uint64_t l = 0; l < d.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    out.push_back(linear(p + "self_attn.q_proj.weight", h, h));
    out.push_back(linear(p + "self_attn.k_proj.weight", kv, h));
    out.push_back(linear(p + "self_attn.v_proj.weight", kv, h));
    out.push_back(linear(p + "self_attn.o_proj.weight", h, h));
    out.push_back(linear(p + "mlp.gate_proj.weight", d.intermediate, h));
    out.push_back(linear(p + "mlp.up_proj.weight", d.intermediate, h));
    out.push_back(linear(p + "mlp.down_proj.weight", h, d.intermediate));
    out.push_back(norm(p + "input_layernorm.weight", h));
    out.push_back(norm(p + "post_attention_layernorm.weight", h));
  }
  out.push_back(norm("model.norm.weight", h));
  // A non-BF16 side tensor: DF11 must carry it through unchanged.
  TensorSpec inv_freq;
  inv_freq.name = "model.rotary_emb.inv_freq";
  inv_freq.dtype = Dtype::kF32;
  inv_freq.shape = {d.head_dim() / 2};
  inv_freq.fill = Fill::kInvFreq;
  out.push_back(inv_freq);
  if (!d.tied) out.push_back(linear("lm_head.weight", d.vocab, h));
  return out;
}

uint64_t llama_total_bytes(const LlamaDims& d) {
  const uint64_t h = d.hidden;
  const uint64_t kv = d.kv_heads * d.head_dim();
  const uint64_t per_layer = 2 * h * h + 2 * kv * h + 3 * d.intermediate * h + 2 * h;
  const uint64_t bf16 = d.vocab * h * (d.tied ? 1 : 2) + d.layers * per_layer + h;
  return 2 * bf16 + 4 * (d.head_dim() / 2);
}

std::string llama_config_json(const LlamaDims& d) {
  nlohmann::json c;
  c["architectures"] = {"LlamaForCausalLM"};
  c["attention_bias"] = false;
  c["attention_dropout"] = 0.0;
  c["bos_token_id"] = 1;
  c["eos_token_id"] = 2;
  c["head_dim"] = d.head_dim();
  c["hidden_act"] = "silu";
  c["hidden_size"] = d.hidden;
  c["initializer_range"] = 0.02;
  c["intermediate_size"] = d.intermediate;
  c["max_position_embeddings"] = 2048;
  c["mlp_bias"] = false;
  c["model_type"] = "llama";
  c["num_attention_heads"] = d.heads;
  c["num_hidden_layers"] = d.layers;
  c["num_key_value_heads"] = d.kv_heads;
  c["pretraining_tp"] = 1;
  c["rms_norm_eps"] = 1e-05;
  c["rope_scaling"] = nullptr;
  c["rope_theta"] = kRopeTheta;
  c["tie_word_embeddings"] = d.tied;
  c["torch_dtype"] = "bfloat16";
  c["transformers_version"] = kTransformersVersion;
  c["use_cache"] = true;
  c["vocab_size"] = d.vocab;
  return c.dump(2) + "\n";
}

std::string generation_config_json() {
  nlohmann::json c;
  c["_from_model_config"] = true;
  c["bos_token_id"] = 1;
  c["eos_token_id"] = 2;
  c["transformers_version"] = kTransformersVersion;
  return c.dump(2) + "\n";
}

std::string tokenizer_json() {
  using nlohmann::json;
  json added = json::array();
  json vocab = json::object();
  const char* specials[] = {"<unk>", "<s>", "</s>"};
  int id = 0;
  for (const char* s : specials) {
    added.push_back({{"id", id},
                     {"content", s},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
    vocab[s] = id++;
  }
  // A byte-level alphabet fragment: letters, digits, a little punctuation and the byte-level
  // space marker U+0120. Enough to tokenize plain ASCII words; not a trained vocabulary.
  std::string alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?'-";
  for (const char c : alphabet) vocab[std::string(1, c)] = id++;
  vocab["\xC4\xA0"] = id++;
  json byte_level = {{"type", "ByteLevel"},
                     {"add_prefix_space", false},
                     {"trim_offsets", true},
                     {"use_regex", true}};
  json t;
  t["version"] = "1.0";
  t["truncation"] = nullptr;
  t["padding"] = nullptr;
  t["added_tokens"] = added;
  t["normalizer"] = nullptr;
  t["pre_tokenizer"] = byte_level;
  t["post_processor"] = nullptr;
  t["decoder"] = byte_level;
  t["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", "<unk>"},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"vocab", vocab},
                {"merges", json::array()}};
  return t.dump(2) + "\n";
}

}  // namespace df11::mkmodel
