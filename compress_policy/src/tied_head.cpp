#include "df11/tied_head.h"

#include <array>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "df11/group_schema.h"

namespace df11::app {
namespace {

constexpr std::array<std::string_view, 5> kEmbeddingRoles = {"shared", "embed_tokens", "wte",
                                                             "word_embeddings", "tok_embeddings"};

// Position of the tensor's role in kEmbeddingRoles, or kEmbeddingRoles.size().
size_t embedding_role(std::string_view name) {
  if (!name.ends_with(".weight")) return kEmbeddingRoles.size();
  name.remove_suffix(7);
  const size_t dot = name.rfind('.');
  const std::string_view leaf = dot == std::string_view::npos ? name : name.substr(dot + 1);
  for (size_t r = 0; r < kEmbeddingRoles.size(); ++r) {
    if (leaf == kEmbeddingRoles[r]) return r;
  }
  return kEmbeddingRoles.size();
}

// config.json and, for multimodal models, its text model's config.
std::array<const nlohmann::json*, 2> config_levels(const nlohmann::json& config) {
  const auto it = config.find("text_config");
  return {&config, it != config.end() ? &*it : nullptr};
}

bool has_lm_head(const nlohmann::json& architectures) {
  if (!architectures.is_array()) return false;
  for (const auto& a : architectures) {
    if (!a.is_string()) continue;
    const std::string& name = a.get_ref<const std::string&>();
    if (name.ends_with("ForCausalLM") || name.ends_with("LMHeadModel") ||
        name.ends_with("ForConditionalGeneration")) {
      return true;
    }
  }
  return false;
}

// tie_word_embeddings as transformers reads it: the key, else the text model's, else its
// default (tied) for models with an LM head.
bool ties_embeddings(const nlohmann::json& config) {
  for (const nlohmann::json* level : config_levels(config)) {
    if (level == nullptr || !level->is_object()) continue;
    const auto it = level->find("tie_word_embeddings");
    if (it != level->end() && it->is_boolean()) return it->get<bool>();
  }
  return has_lm_head(config.value("architectures", nlohmann::json()));
}

std::optional<uint64_t> vocab_size(const nlohmann::json& config) {
  for (const nlohmann::json* level : config_levels(config)) {
    if (level == nullptr || !level->is_object()) continue;
    const auto it = level->find("vocab_size");
    if (it != level->end() && it->is_number_unsigned()) return it->get<uint64_t>();
  }
  return std::nullopt;
}

}  // namespace

std::optional<size_t> find_tied_embedding(std::span<const TensorEntry> tensors,
                                          const std::string& config_text) {
  const nlohmann::json config = nlohmann::json::parse(config_text, nullptr, false);
  if (!config.is_object() || !ties_embeddings(config)) return std::nullopt;
  const std::string head_weight = std::string(kTiedHeadModule) + ".weight";
  const std::optional<uint64_t> vocab = vocab_size(config);
  std::optional<size_t> best;
  size_t best_role = kEmbeddingRoles.size();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorEntry& t = tensors[i];
    if (t.name == head_weight || t.name.ends_with("." + head_weight)) return std::nullopt;
    if (t.dtype != Dtype::kBF16 || t.shape.size() != 2 || t.n_elements == 0) continue;
    if (vocab && t.shape[0] != *vocab) continue;
    const size_t role = embedding_role(t.name);
    // The best role; among equals, the outermost module (the model's own embedding).
    if (role < best_role || (role == best_role && role < kEmbeddingRoles.size() &&
                             t.name.size() < tensors[*best].name.size())) {
      best = i;
      best_role = role;
    }
  }
  return best;
}

std::optional<std::string> tied_embedding_name(const ModelFolder& folder) {
  if (!folder.config_text) return std::nullopt;
  std::vector<TensorEntry> entries;
  for (const TensorLocation& at : folder.tensors_in_file_order()) {
    const TensorInfo& t = folder.tensor(at);
    entries.push_back(TensorEntry{t.name, t.dtype, t.shape, t.n_elements});
  }
  const std::optional<size_t> embedding = find_tied_embedding(entries, *folder.config_text);
  if (!embedding) return std::nullopt;
  return entries[*embedding].name;
}

void add_tied_head(Grouping& grouping, std::span<const TensorEntry> tensors, size_t embedding) {
  const std::string name = kTiedHeadModule;
  std::string clash;
  for (const GroupSpec& g : grouping.groups) {
    if (g.name == name) clash = "group '" + name + "'";
  }
  for (const TensorEntry& t : tensors) {
    for (const GroupTensorSpec& part : kGroupTensors) {
      if (t.name == group_tensor_name(name, part.id)) clash = "tensor '" + t.name + "'";
    }
  }
  if (!clash.empty()) {
    grouping.notes.push_back("tied lm_head not coded for the dfloat11 loader: the " + clash +
                             " already exists");
    return;
  }
  GroupSpec spec;
  spec.name = name;
  spec.kind = GroupKind::kModule;
  spec.members.push_back(embedding);
  spec.alias_name = name + ".weight";
  grouping.groups.push_back(std::move(spec));
}

}  // namespace df11::app
