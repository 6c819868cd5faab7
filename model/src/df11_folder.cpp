#include "df11/df11_folder.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_set>
#include <utility>

#include "df11/header_checksum.h"
#include "df11/model_config.h"

namespace df11::app {

bool has_df11_metadata(const ModelFolder& folder) {
  for (const SafetensorsFile& shard : folder.shards) {
    if (shard.header().metadata_value(kDf11MetadataKey) != nullptr) return true;
  }
  return false;
}

bool is_df11_model(const ModelFolder& folder) {
  if (written_by_df11(folder)) return true;
  for (const auto& [name, at] : folder.tensors) {
    if (name.ends_with(".encoded_exponent")) return true;
  }
  if (!folder.config_text) return false;
  auto dict = read_pattern_dict(*folder.config_text, kConfigFile);
  return dict.is_ok() && dict->has_value();
}

Status not_a_df11_folder(const std::filesystem::path& dir) {
  return Status(ErrorCode::kBadGroup,
                dir.string() +
                    ": not a DF11 folder: no shard holds a DF11 group (no "
                    "'<name>.encoded_exponent' tensors) or df11 metadata; to compress it, run: "
                    "df11 compress " +
                    dir.string() + " -o OUT_DIR");
}

bool written_by_df11(const ModelFolder& folder) {
  if (has_df11_metadata(folder)) return true;
  if (!folder.config_text) return false;
  auto marker = read_df11_marker(*folder.config_text, kConfigFile);
  return marker.is_ok() && marker->has_value();
}

std::string Df11Folder::describe(const std::string& name, const OriginalTensor& t) const {
  if (t.is_member) return groups[t.group].what + ": member '" + name + "'";
  return folder.shard_names[t.raw.shard] + ": tensor '" + name + "'";
}

namespace {

// An error in a header whose checksum failed is most likely the corruption itself: report it
// as such, checksum first.
template <typename T>
Result<T> after_header_check(const Status& header_check, Result<T> result) {
  if (result || header_check) return result;
  return Status(header_check.code(),
                header_check.message() + "; then: " + result.status().message());
}

Status after_header_check(const Status& header_check, Status status) {
  if (status || header_check) return status;
  return Status(header_check.code(), header_check.message() + "; then: " + status.message());
}

// spec 5.3 G8: an alias copies a tensor of the folder: same shape, same original bytes.
Status check_aliases(const Df11Folder& folder) {
  std::unordered_set<std::string> names;
  for (const AliasMember& a : folder.aliases) {
    const CodedGroup& g = folder.groups[a.group];
    const MemberMeta& m = folder.metadata[g.shard].groups[g.meta_index].members[a.member];
    const std::string where = g.what + ": member '" + a.name + "' (alias of '" + a.target + "')";
    if (folder.originals.count(a.name) != 0 || !names.insert(a.name).second) {
      return Status(ErrorCode::kDuplicateName, where + ": its name is also an original tensor's");
    }
    const auto it = folder.originals.find(a.target);
    if (it == folder.originals.end()) {
      return Status(ErrorCode::kBadMetadata, where + ": no tensor of the folder has that name");
    }
    const OriginalTensor& t = it->second;
    const std::vector<uint64_t>& shape =
        t.is_member ? folder.member_meta(t).shape : folder.folder.tensor(t.raw).shape;
    const bool bf16 = t.is_member || folder.folder.tensor(t.raw).dtype == Dtype::kBF16;
    if (!bf16 || shape != m.shape) {
      return Status(ErrorCode::kBadMetadata,
                    where + ": shape " + shape_to_string(m.shape) + ", the tensor it copies is " +
                        (bf16 ? "" : "not BF16, ") + shape_to_string(shape));
    }
    if (t.xxh3 != m.xxh3) {
      return Status(ErrorCode::kBadMetadata,
                    where + ": xxh3 " + m.xxh3 + ", the tensor it copies has " + t.xxh3);
    }
  }
  return Status::ok();
}

}  // namespace

Status first_header_failure(const Df11Folder& folder) {
  for (const Status& s : folder.header_checks) {
    if (!s) return s;
  }
  return Status::ok();
}

Result<Df11Folder> open_df11_folder(ModelFolder model) {
  Df11Folder result;
  result.folder = std::move(model);
  const ModelFolder& folder = result.folder;
  std::unordered_set<std::string> source_names, side_names;
  for (size_t s = 0; s < folder.shards.size(); ++s) {
    const SafetensorsHeader& header = folder.shards[s].header();
    // spec 5.2: the header checksum first; what the header says is read either way, so that
    // verify can name the fields a corruption changed.
    Status header_check = check_header_checksum(header).status();
    DF11_ASSIGN_OR_RETURN(std::optional<Df11Metadata> meta,
                          after_header_check(header_check, read_df11_metadata(header)));
    if (!meta) {
      return after_header_check(
          header_check,
          Status(ErrorCode::kBadMetadata, folder.shard_names[s] +
                                              ": written by df11 but has no df11 metadata (the "
                                              "folder's other shards or its config.json say so)"));
    }
    if (header_check && header.metadata_value(kHeaderChecksumKey) == nullptr &&
        spec_minor_version(meta->spec_version) >= kFolderRecordMinor) {
      header_check = Status(ErrorCode::kBadMetadata,
                            folder.shard_names[s] + ": df11 metadata " + meta->spec_version +
                                " without the header checksum __metadata__ '" +
                                std::string(kHeaderChecksumKey) + "' (required from 1.1 on)");
    }
    result.header_checks.push_back(header_check);
    DF11_ASSIGN_OR_RETURN(
        std::vector<GroupTensors> tensors,
        after_header_check(header_check, check_metadata_against_header(*meta, header)));
    for (size_t g = 0; g < meta->groups.size(); ++g) {
      const GroupMeta& gm = meta->groups[g];
      CodedGroup coded;
      coded.shard = s;
      coded.tensor_shard.fill(s);
      coded.meta_index = g;
      coded.tensors = tensors[g];
      coded.view = group_view(coded.tensors, folder.shards[s].bytes());
      coded.what = folder.shard_names[s] + ": group '" + gm.name + "'";
      coded.member_start.push_back(0);
      for (size_t m = 0; m < gm.members.size(); ++m) {
        const MemberMeta& mm = gm.members[m];
        coded.member_start.push_back(coded.member_start.back() + mm.n_elements);
        if (!mm.alias_of.empty()) {
          result.aliases.push_back(AliasMember{result.groups.size(), m, mm.name, mm.alias_of});
          continue;
        }
        OriginalTensor t;
        t.is_member = true;
        t.group = result.groups.size();
        t.member = m;
        t.xxh3 = mm.xxh3;
        t.byte_size = 2 * mm.n_elements;
        if (!result.originals.emplace(mm.name, std::move(t)).second) {
          return Status(ErrorCode::kDuplicateName,
                        coded.what + ": member '" + mm.name + "' appears twice in the folder");
        }
      }
      result.groups.push_back(std::move(coded));
    }
    for (const RawTensorMeta& raw : meta->tensors) {
      OriginalTensor t;
      t.raw = folder.tensors.at(raw.name);  // check_metadata_against_header: it exists here
      t.xxh3 = raw.xxh3;
      t.byte_size = folder.tensor(t.raw).byte_size();
      if (!result.originals.emplace(raw.name, std::move(t)).second) {
        return Status(ErrorCode::kDuplicateName, folder.shard_names[s] + ": tensor '" + raw.name +
                                                     "' appears twice in the folder");
      }
    }
    for (size_t i = 0; i < meta->sources.size(); ++i) {
      if (!source_names.insert(meta->sources[i].file).second) {
        return Status(ErrorCode::kDuplicateName, folder.shard_names[s] + ": source file '" +
                                                     meta->sources[i].file +
                                                     "' is listed by two shards");
      }
      result.sources.push_back(SourceRef{s, i});
    }
    for (const SideFile& side : meta->side_files) {
      if (!side_names.insert(side.file).second) {
        return Status(ErrorCode::kDuplicateName,
                      folder.shard_names[s] + ": side file '" + side.file + "' is listed twice");
      }
      result.side_files.push_back(side);
    }
    result.metadata.push_back(std::move(*meta));
  }
  DF11_RETURN_IF_ERROR(check_aliases(result));
  std::sort(result.sources.begin(), result.sources.end(),
            [&](const SourceRef& a, const SourceRef& b) {
              return result.source(a).file < result.source(b).file;
            });
  return result;
}

bool config_written_for_the_loader(const Df11Folder& folder) {
  if (!folder.folder.config_text) return false;
  for (const SideFile& f : folder.side_files) {
    if (f.file == kConfigFile) return false;
  }
  const auto j = nlohmann::json::parse(*folder.folder.config_text, nullptr, false);
  return j.is_object() && j.size() == 1 && j.contains(kDfloat11ConfigKey);
}

Status check_side_files_recorded(const Df11Folder& folder) {
  const std::pair<const char*, bool> present[] = {
      {kConfigFile,
       folder.folder.config_text.has_value() && !config_written_for_the_loader(folder)},
      {folder.folder.index_name.c_str(), folder.folder.index_text.has_value()}};
  for (const auto& [name, here] : present) {
    if (!here) continue;
    // (A copy for the lambda: clang 14 cannot capture structured bindings.)
    const std::string file = name;
    const bool recorded = std::any_of(folder.side_files.begin(), folder.side_files.end(),
                                      [&](const SideFile& f) { return f.file == file; });
    if (!recorded) {
      return Status(ErrorCode::kBadMetadata, std::string(name) +
                                                 ": the df11 metadata records no original of it "
                                                 "(expected in the side_files of " +
                                                 folder.folder.shard_names.front() + ")");
    }
  }
  return Status::ok();
}

}  // namespace df11::app
