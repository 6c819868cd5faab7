#include "df11/member_shapes.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

namespace df11::app {
namespace {

using Shape = std::vector<uint64_t>;

// The architecture families of the DFloat11 hub's language models (config.json model_type):
// decoder layers "...layers.N.self_attn.*" and "...layers.N.mlp.*" with the dimensions below.
constexpr std::array<std::string_view, 11> kLlmFamilies = {
    "llama",  "mistral",     "qwen2", "qwen3",   "qwen3_moe", "gemma",
    "gemma2", "gemma3_text", "phi3",  "mixtral", "qwen2_moe"};

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::vector<std::string_view> split_dots(std::string_view name) {
  std::vector<std::string_view> parts;
  size_t begin = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == '.') {
      parts.push_back(name.substr(begin, i - begin));
      begin = i + 1;
    }
  }
  return parts;
}

// What follows "<block>.N." in `name` with every further numeric part written "#"
// ("mlp.experts.#.gate_proj.weight"), for the last such block; nullopt without one.
std::optional<std::string> after_block(std::string_view name, std::string_view block) {
  const auto parts = split_dots(name);
  for (size_t i = parts.size(); i-- > 1;) {
    if (parts[i - 1] != block || !all_digits(parts[i])) continue;
    std::string rest;
    for (size_t k = i + 1; k < parts.size(); ++k) {
      if (!rest.empty()) rest += '.';
      rest += all_digits(parts[k]) ? std::string_view("#") : parts[k];
    }
    return rest;
  }
  return std::nullopt;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// A positive integer field; nullopt if absent or not a positive integer.
std::optional<uint64_t> dim(const nlohmann::json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end() || !it->is_number_integer()) return std::nullopt;
  const int64_t v = it->get<int64_t>();
  if (v <= 0 || v > (int64_t{1} << 40)) return std::nullopt;
  return static_cast<uint64_t>(v);
}

std::optional<Shape> llm_shape(const nlohmann::json& c, const std::string& name) {
  const auto hidden = dim(c, "hidden_size");
  if (!hidden) return std::nullopt;
  const uint64_t h = *hidden;
  const auto vocab = dim(c, "vocab_size");
  if (vocab && (ends_with(name, "embed_tokens.weight") || ends_with(name, "lm_head.weight"))) {
    return Shape{*vocab, h};
  }
  const auto heads = dim(c, "num_attention_heads");
  if (!heads) return std::nullopt;
  const uint64_t kv_heads = dim(c, "num_key_value_heads").value_or(*heads);
  const uint64_t head_dim = dim(c, "head_dim").value_or(h / *heads);
  const uint64_t q = *heads * head_dim, kv = kv_heads * head_dim;
  const auto inter = dim(c, "intermediate_size");
  // MoE experts: Qwen3-MoE moe_intermediate_size; Mixtral's experts use intermediate_size.
  const auto expert_inter =
      dim(c, "moe_intermediate_size") ? dim(c, "moe_intermediate_size") : inter;
  const auto experts = dim(c, "num_experts") ? dim(c, "num_experts") : dim(c, "num_local_experts");
  const auto rest = after_block(name, "layers");
  if (!rest) return std::nullopt;
  const std::string& r = *rest;
  if (r == "self_attn.q_proj.weight") return Shape{q, h};
  if (r == "self_attn.k_proj.weight" || r == "self_attn.v_proj.weight") return Shape{kv, h};
  if (r == "self_attn.o_proj.weight") return Shape{h, q};
  if (r == "self_attn.qkv_proj.weight") return Shape{q + 2 * kv, h};  // Phi-3: fused q, k, v
  if (inter) {
    const uint64_t i = *inter;
    if (r == "mlp.gate_proj.weight" || r == "mlp.up_proj.weight") return Shape{i, h};
    if (r == "mlp.down_proj.weight") return Shape{h, i};
    if (r == "mlp.gate_up_proj.weight") return Shape{2 * i, h};  // Phi-3: fused gate, up
  }
  if (expert_inter) {
    const uint64_t i = *expert_inter;
    if (r == "mlp.experts.#.gate_proj.weight" || r == "mlp.experts.#.up_proj.weight" ||
        r == "block_sparse_moe.experts.#.w1.weight" ||
        r == "block_sparse_moe.experts.#.w3.weight") {
      return Shape{i, h};
    }
    if (r == "mlp.experts.#.down_proj.weight" || r == "block_sparse_moe.experts.#.w2.weight") {
      return Shape{h, i};
    }
  }
  if (experts && (r == "mlp.gate.weight" || r == "block_sparse_moe.gate.weight")) {
    return Shape{*experts, h};
  }
  return std::nullopt;
}

// diffusers' FluxTransformer2DModel: inner dimension D = heads x head_dim, MLP width 4D.
std::optional<Shape> flux_shape(const nlohmann::json& c, const std::string& name) {
  const auto heads = dim(c, "num_attention_heads");
  const auto head_dim = dim(c, "attention_head_dim");
  if (!heads || !head_dim) return std::nullopt;
  const uint64_t d = *heads * *head_dim, m = 4 * d;
  if (const auto r = after_block(name, "single_transformer_blocks")) {
    if (*r == "norm.linear.weight") return Shape{3 * d, d};
    if (*r == "proj_mlp.weight") return Shape{m, d};
    if (*r == "proj_out.weight") return Shape{d, d + m};
    if (*r == "attn.to_q.weight" || *r == "attn.to_k.weight" || *r == "attn.to_v.weight") {
      return Shape{d, d};
    }
    return std::nullopt;
  }
  if (const auto r = after_block(name, "transformer_blocks")) {
    if (*r == "norm1.linear.weight" || *r == "norm1_context.linear.weight") return Shape{6 * d, d};
    // (after_block writes numeric parts "#": ff.net.0.proj, ff.net.2, attn.to_out.0)
    if (*r == "ff.net.#.proj.weight" || *r == "ff_context.net.#.proj.weight") return Shape{m, d};
    if (*r == "ff.net.#.weight" || *r == "ff_context.net.#.weight") return Shape{d, m};
    static constexpr std::array<std::string_view, 8> kSquare = {
        "attn.to_q.weight",       "attn.to_k.weight",       "attn.to_v.weight",
        "attn.add_q_proj.weight", "attn.add_k_proj.weight", "attn.add_v_proj.weight",
        "attn.to_out.#.weight",   "attn.to_add_out.weight"};
    if (std::find(kSquare.begin(), kSquare.end(), *r) != kSquare.end()) return Shape{d, d};
    return std::nullopt;
  }
  const uint64_t in = dim(c, "in_channels").value_or(64);
  const uint64_t patch = dim(c, "patch_size").value_or(1);
  const uint64_t out = dim(c, "out_channels").value_or(in);
  if (name == "x_embedder.weight") return Shape{d, in};
  if (name == "proj_out.weight") return Shape{patch * patch * out, d};
  if (name == "norm_out.linear.weight") return Shape{2 * d, d};
  if (const auto joint = dim(c, "joint_attention_dim");
      joint && name == "context_embedder.weight") {
    return Shape{d, *joint};
  }
  if (name == "time_text_embed.timestep_embedder.linear_1.weight" ||
      name == "time_text_embed.guidance_embedder.linear_1.weight") {
    return Shape{d, 256};  // sinusoidal timestep projection of 256 channels
  }
  if (name == "time_text_embed.timestep_embedder.linear_2.weight" ||
      name == "time_text_embed.guidance_embedder.linear_2.weight" ||
      name == "time_text_embed.text_embedder.linear_2.weight") {
    return Shape{d, d};
  }
  if (const auto pooled = dim(c, "pooled_projection_dim");
      pooled && name == "time_text_embed.text_embedder.linear_1.weight") {
    return Shape{d, *pooled};
  }
  return std::nullopt;
}

std::optional<nlohmann::json> parse_object(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  auto json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return std::nullopt;
  return json;
}

}  // namespace

Result<MemberShapes> MemberShapes::from_config(const std::optional<std::string>& config_text) {
  MemberShapes shapes;
  if (!config_text) return shapes;
  auto config = parse_object(config_text);
  if (!config) {
    return Status(ErrorCode::kBadConfig, std::string(kConfigFile) + ": not a JSON object");
  }
  shapes.config_is_bare_ = !config->contains("model_type") && !config->contains("architectures") &&
                           !config->contains("_class_name");
  std::string type;
  if (const auto it = config->find("model_type"); it != config->end() && it->is_string()) {
    type = it->get<std::string>();
  }
  const auto class_name = config->find("_class_name");
  if (class_name != config->end() && class_name->is_string() &&
      class_name->get<std::string>() == "FluxTransformer2DModel") {
    shapes.family_ = "flux";
    shapes.config_ = std::move(*config);
  } else if (std::find(kLlmFamilies.begin(), kLlmFamilies.end(), type) != kLlmFamilies.end()) {
    shapes.family_ = type;
    shapes.config_ = std::move(*config);
  } else if (const auto text = config->find("text_config");
             text != config->end() && text->is_object()) {
    // Multimodal wrappers (Gemma 3): the language model's dimensions are in text_config.
    const auto it = text->find("model_type");
    if (it != text->end() && it->is_string() &&
        std::find(kLlmFamilies.begin(), kLlmFamilies.end(), it->get<std::string>()) !=
            kLlmFamilies.end()) {
      shapes.family_ = it->get<std::string>();
      shapes.config_ = *text;
      shapes.language_model_only_ = true;
    }
  }
  return shapes;
}

size_t MemberShapes::source_index(const std::string& source) {
  const auto it = std::find(sources_.begin(), sources_.end(), source);
  if (it != sources_.end()) return static_cast<size_t>(it - sources_.begin());
  sources_.push_back(source);
  return sources_.size() - 1;
}

void MemberShapes::add_like(const ModelFolder& like) {
  const size_t source = source_index("--like");
  for (const auto& [name, at] : like.tensors) given_[name] = Given{like.tensor(at).shape, source};
}

bool MemberShapes::add(const std::string& name, std::vector<uint64_t> shape,
                       const std::string& source) {
  return given_.emplace(name, Given{std::move(shape), source_index(source)}).second;
}

std::optional<std::vector<uint64_t>> MemberShapes::shape_of(const std::string& name) const {
  if (const auto it = given_.find(name); it != given_.end()) return it->second.shape;
  return from_family(name);
}

std::string MemberShapes::source_of(const std::string& name) const {
  if (const auto it = given_.find(name); it != given_.end()) return sources_[it->second.source];
  return kConfigFile;
}

std::optional<std::vector<uint64_t>> MemberShapes::from_family(const std::string& name) const {
  if (family_.empty()) return std::nullopt;
  // text_config describes the language model only, not the vision tower beside it (the
  // head may sit outside the language model: "lm_head.weight").
  if (language_model_only_ && name.find("language_model.") == std::string::npos &&
      !ends_with(name, "lm_head.weight")) {
    return std::nullopt;
  }
  if (family_ == "flux") return flux_shape(config_, name);
  return llm_shape(config_, name);
}

bool config_ties_embeddings(const std::optional<std::string>& config_text) {
  const auto config = parse_object(config_text);
  if (!config) return false;
  auto says_tied = [](const nlohmann::json& c) {
    const auto it = c.find("tie_word_embeddings");
    return it != c.end() && it->is_boolean() && it->get<bool>();
  };
  if (says_tied(*config)) return true;
  const auto text = config->find("text_config");
  return text != config->end() && text->is_object() && says_tied(*text);
}

std::optional<std::string> tied_embedding_of(const std::string& name,
                                             const std::optional<std::string>& config_text,
                                             const std::vector<std::string>& candidates) {
  constexpr std::string_view kHead = "lm_head.weight";
  if (!ends_with(name, kHead)) return std::nullopt;
  const std::string prefix = name.substr(0, name.size() - kHead.size());
  if (!prefix.empty() && prefix.back() != '.') return std::nullopt;
  if (const auto config = parse_object(config_text)) {
    // An explicit "tie_word_embeddings": false (top level) means the head is its own weight.
    const auto it = config->find("tie_word_embeddings");
    if (it != config->end() && it->is_boolean() && !it->get<bool>()) return std::nullopt;
  }
  std::optional<std::string> found;
  for (const std::string& c : candidates) {
    const bool embedding =
        c.compare(0, prefix.size(), prefix) == 0 &&
        (ends_with(c, ".embed_tokens.weight") || c == prefix + "transformer.wte.weight" ||
         c == prefix + "shared.weight");
    if (!embedding) continue;
    if (found) return std::nullopt;  // two embeddings: which one is tied is not clear
    found = c;
  }
  return found;
}

}  // namespace df11::app
