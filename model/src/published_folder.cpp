#include "df11/published_folder.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <span>
#include <unordered_set>

#include "df11/group_tensors.h"
#include "df11/loader_check.h"
#include "df11/metadata.h"
#include "df11/model_config.h"

namespace df11::app {

namespace {

uint64_t element_count(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) {
    if (d != 0 && n > UINT64_MAX / d) return UINT64_MAX;  // cannot match any group's count
    n *= d;
  }
  return n;
}

std::string name_list(const std::vector<std::string>& names) {
  constexpr size_t kShown = 5;
  std::string text;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) {
    text += (i == 0 ? "'" : ", '") + names[i] + "'";
  }
  if (names.size() > kShown) text += " and " + std::to_string(names.size() - kShown) + " more";
  return text;
}

}  // namespace

Result<PublishedGroups> find_published_groups(const std::vector<const SafetensorsHeader*>& headers,
                                              const std::string& where) {
  PublishedGroups result;
  DF11_ASSIGN_OR_RETURN(result.groups, enumerate_folder_groups(headers, where));
  std::unordered_set<std::string_view> names;
  for (const FolderGroup& found : result.groups) {
    for (const TensorInfo* t : found.tensors.all()) result.stored.insert(t);
    names.insert(found.tensors.name);
  }
  // spec 7.8: a guard lies under a member's name, "P.weight" or "P.<module>.weight".
  for (const SafetensorsHeader* header : headers) {
    for (const TensorInfo& t : header->tensors) {
      if (!is_guard_tensor(t)) continue;
      const std::string_view name = t.name;
      for (size_t dot = name.find('.'); dot != std::string_view::npos;
           dot = name.find('.', dot + 1)) {
        if (names.contains(name.substr(0, dot))) {
          result.stored.insert(&t);
          break;
        }
      }
    }
  }
  return result;
}

Result<PublishedGroups> find_published_groups(const ModelFolder& model) {
  std::vector<const SafetensorsHeader*> headers;
  for (const SafetensorsFile& shard : model.shards) headers.push_back(&shard.header());
  return find_published_groups(headers, model.dir.string());
}

GroupView published_group_view(const FolderGroup& group,
                               const std::vector<SafetensorsFile>& shards) {
  std::array<std::span<const uint8_t>, kGroupTensorCount> bytes;
  for (size_t i = 0; i < kGroupTensorCount; ++i) bytes[i] = shards[group.file_of[i]].bytes();
  return group_view(group.tensors, bytes);
}

Result<PublishedFolder> read_published_folder(ModelFolder model, const MemberShapes& shapes,
                                              const std::string& unknown_hint) {
  PublishedFolder result;
  Df11Folder& df = result.folder;
  df.folder = std::move(model);
  const ModelFolder& folder = df.folder;
  const std::string where = (folder.dir / kConfigFile).string();
  if (!folder.config_text) {
    return Status(ErrorCode::kBadConfig,
                  where +
                      ": missing; its dfloat11_config.pattern_dict says which weights each "
                      "group holds");
  }
  DF11_ASSIGN_OR_RETURN(std::optional<nlohmann::ordered_json> dict,
                        read_pattern_dict(*folder.config_text, where));
  if (!dict) {
    return Status(ErrorCode::kBadConfig,
                  where + ": no dfloat11_config: cannot tell which weights the groups hold");
  }
  DF11_ASSIGN_OR_RETURN(LoaderPatterns patterns, LoaderPatterns::compile(*dict, where));

  // Spec 7.8: a group's six stored tensors may lie in different shards of the folder.
  DF11_ASSIGN_OR_RETURN(PublishedGroups published, find_published_groups(folder));
  std::vector<FolderGroup>& groups = published.groups;
  const std::unordered_set<const TensorInfo*>& stored = published.stored;

  std::vector<std::string> unknown;
  result.shards.resize(folder.shards.size());
  size_t next = 0;  // groups come shard by shard, as their encoded_exponent tensors lie
  for (size_t s = 0; s < folder.shards.size(); ++s) {
    const SafetensorsFile& shard = folder.shards[s];
    for (; next < groups.size() && groups[next].file() == s; ++next) {
      FolderGroup& found = groups[next];
      GroupTensors& group = found.tensors;
      CodedGroup coded;
      coded.shard = s;
      coded.tensor_shard = found.file_of;
      coded.what = folder.shard_names[s] + ": group '" + group.name + "'";
      coded.view = published_group_view(found, folder.shards);
      DF11_ASSIGN_OR_RETURN(GroupInfo info, validate_group(coded.view, coded.what));
      auto names = patterns.member_names(group.name);
      if (!names) {
        return Status(names.status().code(),
                      folder.shard_names[s] + ": " + names.status().message());
      }
      const size_t n_splits = coded.view.split_positions.size() / 8;
      if (names->size() != n_splits + 1) {
        return Status(ErrorCode::kBadGroup, coded.what + ": pattern_dict names " +
                                                std::to_string(names->size()) +
                                                " weights, split_positions has " +
                                                std::to_string(n_splits + 1) + " parts");
      }
      coded.member_start.push_back(0);
      // validate_group checked the split positions are increasing within (0, n).
      for (size_t k = 0; k < n_splits; ++k) {
        coded.member_start.push_back(load_le64(coded.view.split_positions.data() + 8 * k));
      }
      coded.member_start.push_back(info.n_elements);
      for (size_t k = 0; k < names->size(); ++k) {
        const std::string& name = (*names)[k];
        const uint64_t count = coded.member_start[k + 1] - coded.member_start[k];
        RestoredTensor restored;
        restored.name = name;
        restored.source.is_member = true;
        restored.source.group = df.groups.size();
        restored.source.member = k;
        restored.source.byte_size = 2 * count;
        if (auto shape = shapes.shape_of(name)) {
          if (element_count(*shape) != count) {
            return Status(ErrorCode::kBadShape, coded.what + ": member '" + name + "' holds " +
                                                    std::to_string(count) + " weights, its shape " +
                                                    shape_to_string(*shape) + " (from " +
                                                    shapes.source_of(name) + ") has " +
                                                    std::to_string(element_count(*shape)));
          }
          restored.shape = std::move(*shape);
        } else {
          unknown.push_back(name);
        }
        if (!df.originals.emplace(name, restored.source).second) {
          return Status(ErrorCode::kDuplicateName,
                        coded.what + ": weight '" + name + "' appears twice in the folder");
        }
        result.shards[s].push_back(std::move(restored));
      }
      coded.tensors = std::move(group);
      df.groups.push_back(std::move(coded));
    }
    const auto& tensors = shard.header().tensors;
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (stored.count(&tensors[i]) != 0) continue;
      RestoredTensor restored;
      restored.name = tensors[i].name;
      restored.shape = tensors[i].shape;
      restored.source.raw = TensorLocation{s, i};
      restored.source.byte_size = tensors[i].byte_size();
      if (!df.originals.emplace(restored.name, restored.source).second) {
        return Status(
            ErrorCode::kDuplicateName,
            folder.shard_names[s] + ": tensor '" + restored.name + "' appears twice in the folder");
      }
      result.shards[s].push_back(std::move(restored));
    }
  }
  if (!unknown.empty()) {
    // A head the dfloat11 encoder stored as a group of its own has its tied embedding's
    // shape (the original, e.g. a --like folder, holds the embedding only).
    std::vector<std::string> names;
    for (const auto& [name, t] : df.originals) names.push_back(name);
    std::sort(names.begin(), names.end());
    for (auto& shard : result.shards) {
      for (RestoredTensor& t : shard) {
        if (std::find(unknown.begin(), unknown.end(), t.name) == unknown.end()) continue;
        const auto embedding = tied_embedding_of(t.name, folder.config_text, names);
        if (!embedding) continue;
        const auto shape = shapes.shape_of(*embedding);
        if (!shape || 2 * element_count(*shape) != t.source.byte_size) continue;
        t.shape = *shape;
        unknown.erase(std::find(unknown.begin(), unknown.end(), t.name));
      }
    }
  }
  if (!unknown.empty()) {
    std::sort(unknown.begin(), unknown.end());
    const std::string family =
        shapes.config_is_bare() ? "config.json holds no model config, only dfloat11_config"
        : shapes.family().empty()
            ? "config.json names no architecture df11 knows"
            : "config.json's " + shapes.family() + " family does not cover them";
    return Status(ErrorCode::kUnsupported, folder.dir.string() + ": the shapes of " +
                                               std::to_string(unknown.size()) +
                                               " coded weights are unknown (" + family +
                                               "): " + name_list(unknown) + "; " + unknown_hint);
  }
  for (auto& shard : result.shards) {
    std::sort(shard.begin(), shard.end(),
              [](const RestoredTensor& a, const RestoredTensor& b) { return a.name < b.name; });
  }
  return result;
}

}  // namespace df11::app
