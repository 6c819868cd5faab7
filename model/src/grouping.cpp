#include "grouping.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "df11/group_schema.h"
#include "python_regex.h"

namespace df11::app {
namespace {

constexpr std::string_view kWeightSuffix = ".weight";

bool is_block_word(std::string_view word) {
  return word == "layers" || word == "h" || word == "blocks" || word == "layer";
}

bool all_digits(std::string_view word) {
  return !word.empty() &&
         std::all_of(word.begin(), word.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A tensor that may be coded at all: a non-empty 2-D BF16 "<module>.weight".
bool is_codable_weight(const TensorEntry& t) {
  return t.dtype == Dtype::kBF16 && t.shape.size() == 2 && t.n_elements > 0 &&
         t.name.size() > kWeightSuffix.size() && t.name.ends_with(kWeightSuffix);
}

std::string_view module_of(std::string_view tensor_name) {
  return tensor_name.substr(0, tensor_name.size() - kWeightSuffix.size());
}

struct BlockMatch {
  std::string prefix;  // "model.layers"
  std::string index;   // "3"
  std::string sub;     // "self_attn.q_proj"
};

// The outermost P = <prefix>.<digits> with <prefix> ending in a block word, such that the
// module path is "P.<sub>" with a non-empty sub.
std::optional<BlockMatch> match_block(std::string_view module) {
  size_t start = 0;  // start of the current component
  size_t prev_start = std::string_view::npos;
  while (start <= module.size()) {
    size_t end = module.find('.', start);
    if (end == std::string_view::npos) end = module.size();
    const std::string_view word = module.substr(start, end - start);
    if (prev_start != std::string_view::npos && all_digits(word) &&
        is_block_word(module.substr(prev_start, start - 1 - prev_start))) {
      if (end + 1 >= module.size()) return std::nullopt;  // P is the whole path: no sub
      return BlockMatch{std::string(module.substr(0, start - 1)), std::string(word),
                        std::string(module.substr(end + 1))};
    }
    if (end == module.size()) break;
    prev_start = start;
    start = end + 1;
  }
  return std::nullopt;
}

bool is_embedding_module(std::string_view module) {
  return module.find("embed") != std::string_view::npos;
}

bool is_head_module(std::string_view module) {
  return module == "lm_head" || module.ends_with(".lm_head");
}

}  // namespace

Grouping derive_groups(std::span<const TensorEntry> tensors, GroupBy by) {
  Grouping result;
  std::unordered_map<std::string, size_t> group_of_name;  // P -> index in result.groups
  std::vector<bool> grouped(tensors.size(), false);

  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorEntry& t = tensors[i];
    if (!is_codable_weight(t)) continue;
    const std::string_view module = module_of(t.name);
    GroupSpec spec;
    if (by == GroupBy::kBlock) {
      if (auto block = match_block(module)) {
        std::string name = block->prefix + "." + block->index;
        auto it = group_of_name.find(name);
        if (it != group_of_name.end() && result.groups[it->second].kind == GroupKind::kBlock) {
          result.groups[it->second].members.push_back(i);
          result.groups[it->second].member_modules.push_back(std::move(block->sub));
          grouped[i] = true;
          continue;
        }
        spec.name = std::move(name);
        spec.kind = GroupKind::kBlock;
        spec.block_prefix = std::move(block->prefix);
        spec.block_index = std::move(block->index);
        spec.member_modules.push_back(std::move(block->sub));
      } else if (is_embedding_module(module) || is_head_module(module)) {
        spec.name = std::string(module);
      } else {
        continue;
      }
    } else {
      spec.name = std::string(module);
    }
    if (group_of_name.count(spec.name) != 0) {
      result.notes.push_back("tensor '" + t.name + "' stored unchanged: its group name '" +
                             spec.name + "' is already used by another group");
      continue;
    }
    spec.members.push_back(i);
    group_of_name.emplace(spec.name, result.groups.size());
    result.groups.push_back(std::move(spec));
    grouped[i] = true;
  }

  // A stored tensor "<P>.luts" etc. must not clash with a tensor kept under its own name.
  std::unordered_set<std::string_view> raw_names;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!grouped[i]) raw_names.insert(tensors[i].name);
  }
  std::vector<GroupSpec> kept;
  kept.reserve(result.groups.size());
  for (GroupSpec& g : result.groups) {
    std::string clash;
    for (const GroupTensorSpec& t : kGroupTensors) {
      const std::string stored = group_tensor_name(g.name, t.id);
      if (raw_names.count(stored) != 0) clash = stored;
    }
    if (clash.empty()) {
      kept.push_back(std::move(g));
      continue;
    }
    result.notes.push_back("group '" + g.name + "' stored unchanged: its tensor name '" + clash +
                           "' is already used by a tensor of the model");
    for (size_t m : g.members) grouped[m] = false;
  }
  result.groups = std::move(kept);
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!grouped[i]) result.raw.push_back(i);
  }
  return result;
}

nlohmann::ordered_json derive_pattern_dict(std::span<const GroupSpec> groups,
                                           const std::vector<bool>& coded) {
  // Per block prefix: the distinct member lists, each with its layers, in first-seen order.
  struct ListLayers {
    std::vector<std::string> modules;
    std::vector<std::string> layers;
    bool any_coded = false;
  };
  std::map<std::string, std::vector<ListLayers>> lists_of_prefix;
  for (size_t i = 0; i < groups.size(); ++i) {
    const GroupSpec& g = groups[i];
    if (g.kind != GroupKind::kBlock) continue;
    auto& lists = lists_of_prefix[g.block_prefix];
    auto it = std::find_if(lists.begin(), lists.end(),
                           [&](const ListLayers& l) { return l.modules == g.member_modules; });
    if (it == lists.end()) {
      lists.push_back(ListLayers{g.member_modules, {}, false});
      it = lists.end() - 1;
    }
    it->layers.push_back(g.block_index);
    it->any_coded = it->any_coded || coded[i];
  }

  nlohmann::ordered_json dict = nlohmann::ordered_json::object();
  for (size_t i = 0; i < groups.size(); ++i) {
    const GroupSpec& g = groups[i];
    if (g.kind == GroupKind::kModule) {
      if (coded[i]) dict[python_regex_escape(g.name)] = nlohmann::ordered_json::array();
      continue;
    }
    const auto& lists = lists_of_prefix[g.block_prefix];
    const auto it = std::find_if(lists.begin(), lists.end(), [&](const ListLayers& l) {
      return l.modules == g.member_modules;
    });
    if (!it->any_coded) continue;
    std::string key = python_regex_escape(g.block_prefix) + "\\.";
    if (lists.size() == 1) {
      key += "\\d+";
    } else {
      std::vector<std::string> layers = it->layers;
      std::sort(layers.begin(), layers.end(), [](const std::string& a, const std::string& b) {
        return a.size() != b.size() ? a.size() < b.size() : a < b;  // numeric for digits
      });
      key += "(?:";
      for (size_t k = 0; k < layers.size(); ++k) key += (k ? "|" : "") + layers[k];
      key += ")";
    }
    if (!dict.contains(key)) dict[key] = it->modules;
  }
  return dict;
}

}  // namespace df11::app
