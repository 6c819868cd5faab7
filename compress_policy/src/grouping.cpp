#include "df11/grouping.h"

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

// spec 7.4: the outermost P = <prefix>.<digits> (prefix non-empty) such that the module path
// is "P.<sub>" with a non-empty sub: any module list entry (layers.N, h.N, blocks.N,
// transformer_blocks.N, double_blocks.N, down_blocks.N, block.N, ...).
std::optional<BlockMatch> match_block(std::string_view module) {
  size_t start = module.find('.');  // the first component cannot be the index: no prefix
  while (start != std::string_view::npos) {
    ++start;
    const size_t end = module.find('.', start);
    if (end == std::string_view::npos) return std::nullopt;  // last component: no sub
    if (all_digits(module.substr(start, end - start))) {
      return BlockMatch{std::string(module.substr(0, start - 1)),
                        std::string(module.substr(start, end - start)),
                        std::string(module.substr(end + 1))};
    }
    start = end;
  }
  return std::nullopt;
}

// spec 7.4: an embedding inside a block (T5's relative_attention_bias, a position embedding)
// is an nn.Embedding, which the loader cannot take as a block member (it views members as
// (out_features, in_features)): it is a module group of its own.
bool is_embedding_leaf(std::string_view sub) {
  const size_t dot = sub.rfind('.');
  const std::string_view leaf = dot == std::string_view::npos ? sub : sub.substr(dot + 1);
  return leaf.find("embed") != std::string_view::npos || leaf.ends_with("_bias");
}

// The escaped block prefix with every numeric component as \d+: the experts of every
// layer ("model.layers.3.mlp.experts") share one key.
std::string prefix_key(std::string_view prefix) {
  std::string key;
  size_t start = 0;
  while (start <= prefix.size()) {
    size_t end = prefix.find('.', start);
    if (end == std::string_view::npos) end = prefix.size();
    const std::string_view word = prefix.substr(start, end - start);
    if (start != 0) key += "\\.";
    key += all_digits(word) ? std::string("\\d+") : python_regex_escape(std::string(word));
    start = end + 1;
  }
  return key;
}

uint64_t group_elements(const GroupSpec& g, std::span<const TensorEntry> tensors) {
  uint64_t n = 0;
  for (size_t m : g.members) n += tensors[m].n_elements;
  return n;
}

GroupSpec module_group(std::string name, size_t member) {
  GroupSpec spec;
  spec.name = std::move(name);
  spec.kind = GroupKind::kModule;
  spec.members.push_back(member);
  return spec;
}

// spec 7.4: a block above Max_Elements_Compat splits: members under a numbered sub-module
// (an MoE layer's experts.N) become one group per such sub-module, the rest stay in the
// block; a group still too large becomes one group per tensor.
void split_oversized(std::vector<GroupSpec>& groups, std::span<const TensorEntry> tensors,
                     uint64_t max_elements, std::vector<std::string>& notes) {
  std::vector<GroupSpec> out;
  for (GroupSpec& g : groups) {
    const uint64_t n = group_elements(g, tensors);
    if (g.kind != GroupKind::kBlock || n <= max_elements) {
      out.push_back(std::move(g));
      continue;
    }
    GroupSpec rest = g;
    rest.members.clear();
    rest.member_modules.clear();
    std::vector<GroupSpec> parts;
    std::unordered_map<std::string, size_t> part_of;
    for (size_t k = 0; k < g.members.size(); ++k) {
      auto sub = match_block(g.member_modules[k]);
      if (!sub) {
        rest.members.push_back(g.members[k]);
        rest.member_modules.push_back(g.member_modules[k]);
        continue;
      }
      const std::string name = g.name + "." + sub->prefix + "." + sub->index;
      auto [it, fresh] = part_of.emplace(name, parts.size());
      if (fresh) {
        GroupSpec part;
        part.name = name;
        part.kind = GroupKind::kBlock;
        part.block_prefix = g.name + "." + sub->prefix;
        part.block_index = sub->index;
        parts.push_back(std::move(part));
      }
      parts[it->second].members.push_back(g.members[k]);
      parts[it->second].member_modules.push_back(std::move(sub->sub));
    }
    if (!rest.members.empty()) parts.insert(parts.begin(), std::move(rest));
    size_t per_tensor = 0, kept_parts = 0;
    for (GroupSpec& part : parts) {
      if (group_elements(part, tensors) <= max_elements) {
        out.push_back(std::move(part));
        ++kept_parts;
        continue;
      }
      for (size_t k = 0; k < part.members.size(); ++k) {
        out.push_back(module_group(part.name + "." + part.member_modules[k], part.members[k]));
        ++per_tensor;
      }
    }
    notes.push_back("group '" + g.name + "' has " + std::to_string(n) +
                    " weights, above the loader's limit of " + std::to_string(max_elements) +
                    " (Max_Elements_Compat): coded as " + std::to_string(kept_parts) +
                    " groups of numbered sub-modules" +
                    (per_tensor ? " and " + std::to_string(per_tensor) + " single tensors" : "") +
                    " instead");
  }
  // Groups stay ordered by their first member.
  std::stable_sort(out.begin(), out.end(), [](const GroupSpec& a, const GroupSpec& b) {
    return a.members.front() < b.members.front();
  });
  groups = std::move(out);
}

}  // namespace

Grouping derive_groups(std::span<const TensorEntry> tensors, GroupBy by,
                       uint64_t max_group_elements) {
  Grouping result;
  std::unordered_map<std::string, size_t> group_of_name;  // P -> index in result.groups
  std::vector<bool> grouped(tensors.size(), false);

  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorEntry& t = tensors[i];
    if (!is_codable_weight(t)) continue;
    const std::string_view module = module_of(t.name);
    GroupSpec spec;
    if (by == GroupBy::kBlock) {
      auto block = match_block(module);
      if (block && !is_embedding_leaf(block->sub)) {
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
      } else {
        spec.name = std::string(module);  // spec 7.4: a module of its own (Linear, Embedding)
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

  split_oversized(result.groups, tensors, max_group_elements, result.notes);

  // A stored tensor "<P>.luts" etc. must not clash with a tensor kept under its own name.
  std::unordered_set<std::string_view> raw_names;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!grouped[i]) raw_names.insert(tensors[i].name);
  }
  std::vector<GroupSpec> kept;
  kept.reserve(result.groups.size());
  std::unordered_set<std::string> kept_names;
  for (GroupSpec& g : result.groups) {
    if (!kept_names.insert(g.name).second) {
      result.notes.push_back("group '" + g.name + "' stored unchanged: its name is already used " +
                             "by another group");
      for (size_t m : g.members) grouped[m] = false;
      continue;
    }
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
  // Per block prefix key: the distinct member lists, each with its groups, in first-seen
  // order.
  struct ListGroups {
    std::vector<std::string> modules;
    std::vector<size_t> groups;
    bool any_coded = false;
  };
  std::map<std::string, std::vector<ListGroups>> lists_of_prefix;
  for (size_t i = 0; i < groups.size(); ++i) {
    const GroupSpec& g = groups[i];
    if (g.kind != GroupKind::kBlock) continue;
    auto& lists = lists_of_prefix[prefix_key(g.block_prefix)];
    auto it = std::find_if(lists.begin(), lists.end(),
                           [&](const ListGroups& l) { return l.modules == g.member_modules; });
    if (it == lists.end()) {
      lists.push_back(ListGroups{g.member_modules, {}, false});
      it = lists.end() - 1;
    }
    it->groups.push_back(i);
    it->any_coded = it->any_coded || coded[i];
  }

  nlohmann::ordered_json dict = nlohmann::ordered_json::object();
  for (size_t i = 0; i < groups.size(); ++i) {
    const GroupSpec& g = groups[i];
    if (g.kind == GroupKind::kModule) {
      if (coded[i]) dict[python_regex_escape(g.name)] = nlohmann::ordered_json::array();
      continue;
    }
    const std::string prefix = prefix_key(g.block_prefix);
    const auto& lists = lists_of_prefix[prefix];
    const auto it = std::find_if(lists.begin(), lists.end(), [&](const ListGroups& l) {
      return l.modules == g.member_modules;
    });
    if (!it->any_coded) continue;
    std::string key;
    if (lists.size() == 1) {
      key = prefix + "\\.\\d+";
    } else if (prefix == python_regex_escape(g.block_prefix)) {
      // One literal prefix: alternation of the block numbers.
      std::vector<std::string> numbers;
      for (size_t k : it->groups) numbers.push_back(groups[k].block_index);
      std::sort(numbers.begin(), numbers.end(), [](const std::string& a, const std::string& b) {
        return a.size() != b.size() ? a.size() < b.size() : a < b;  // numeric for digits
      });
      key = prefix + "\\.(?:";
      for (size_t k = 0; k < numbers.size(); ++k) key += (k ? "|" : "") + numbers[k];
      key += ")";
    } else {
      // Numbered prefixes (split experts) with several lists: the groups' full names.
      key = "(?:";
      for (size_t k = 0; k < it->groups.size(); ++k) {
        key += (k ? "|" : "") + python_regex_escape(groups[it->groups[k]].name);
      }
      key += ")";
    }
    if (!dict.contains(key)) dict[key] = it->modules;
  }
  return dict;
}

}  // namespace df11::app
