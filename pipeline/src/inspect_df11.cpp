#include "inspect_df11.h"

#include <algorithm>
#include <optional>
#include <unordered_set>
#include <vector>

#include "df11/decoder.h"
#include "df11/encoder.h"
#include "df11/group_tensors.h"
#include "df11/metadata.h"
#include "df11/model_config.h"
#include "df11/published_folder.h"
#include "df11/safe_regex.h"

namespace df11::app {
namespace {

// Weights decoded per step while counting exponents: 8 MiB of output, reused.
constexpr uint64_t kCountSliceWeights = uint64_t{1} << 22;

// Exponent counts of a validated group, by decoding it slice by slice (parallel inside).
Result<Histogram> count_exponents(const GroupView& view, const GroupInfo& info,
                                  const std::string& what, const CancelToken& cancel) {
  Histogram counts{};
  std::vector<uint16_t> slice(std::min(info.n_elements, kCountSliceWeights));
  for (uint64_t first = 0; first < info.n_elements; first += kCountSliceWeights) {
    DF11_RETURN_IF_ERROR(cancel.check());
    const uint64_t n = std::min(kCountSliceWeights, info.n_elements - first);
    const std::span<uint16_t> out(slice.data(), n);
    DF11_RETURN_IF_ERROR(decode_group(view, out, what, first, &info));
    const Histogram h = exponent_histogram(out);
    for (int e = 0; e < 256; ++e) counts[e] += h[e];
  }
  return counts;
}

// Member sizes from split_positions (cumulative ends, except the last: spec 3.2), which
// validate_group() has checked to be strictly increasing within (0, n).
std::vector<uint64_t> member_sizes(const GroupView& view, uint64_t n) {
  std::vector<uint64_t> sizes;
  uint64_t previous = 0;
  for (size_t i = 0; i + 8 <= view.split_positions.size(); i += 8) {
    const uint64_t end = load_le64(view.split_positions.data() + i);
    sizes.push_back(end - previous);
    previous = end;
  }
  sizes.push_back(n - previous);
  return sizes;
}

// Member tensor names of a group from config.json's pattern_dict (the dfloat11 loader's own
// description): the first key that fully matches the module path, matched with SafeRegex
// (Python's syntax, linear time: keys come from an untrusted config.json). Empty when unknown.
std::vector<std::string> names_from_pattern_dict(const std::optional<nlohmann::ordered_json>& dict,
                                                 const std::string& module, size_t n_members) {
  if (!dict) return {};
  for (const auto& [key, subs] : dict->items()) {
    auto regex = SafeRegex::compile(key);
    if (!regex) continue;  // outside the supported subset: this key cannot name members here
    if (!regex->full_match(module)) continue;
    std::vector<std::string> names;
    if (subs.empty()) names.push_back(module + ".weight");
    for (const auto& sub : subs) names.push_back(module + "." + sub.get<std::string>() + ".weight");
    if (names.size() == n_members) return names;
    return {};
  }
  return {};
}

// The groups of a checkpoint without df11 metadata in any shard, found across its shards
// (spec 7.8: a group's stored tensors may lie in different shards); nothing where a shard has
// df11 metadata (df11's folders keep each group in its shard: spec 5.4).
Result<std::optional<PublishedGroups>> published_groups(
    const std::vector<const SafetensorsHeader*>& headers, const std::string& where) {
  for (const SafetensorsHeader* header : headers) {
    if (header->metadata_value(kDf11MetadataKey) != nullptr)
      return std::optional<PublishedGroups>();
  }
  DF11_ASSIGN_OR_RETURN(PublishedGroups groups, find_published_groups(headers, where));
  return std::optional<PublishedGroups>(std::move(groups));
}

// Appends groups whose six tensors shard `s` holds.
void in_this_shard(std::vector<GroupTensors> found, size_t s, std::vector<FolderGroup>& groups) {
  for (GroupTensors& g : found) {
    FolderGroup in_shard{std::move(g), {}};
    in_shard.file_of.fill(s);
    groups.push_back(std::move(in_shard));
  }
}

// The groups of shard `s` from its header alone: names, members and stored sizes (spec 3.2:
// n is the sign_mantissa byte count), counts unknown. Without df11 metadata, the groups are
// `published`'s whose encoded_exponent the shard holds, member names come from pattern_dict
// and member sizes from split_positions, which needs the bytes: they stay 0 here. Fills
// `groups` with the groups' tensors, in report order.
Status describe_shard(const SafetensorsHeader& header, size_t s, const std::string& file,
                      const std::optional<nlohmann::ordered_json>& pattern_dict,
                      const std::optional<PublishedGroups>& published, InspectReport& report,
                      bool& all_sources_known, std::vector<FolderGroup>& groups,
                      bool& has_metadata) {
  DF11_ASSIGN_OR_RETURN(std::optional<Df11Metadata> metadata, read_df11_metadata(header));
  has_metadata = metadata.has_value();
  groups.clear();
  if (metadata) {
    DF11_ASSIGN_OR_RETURN(std::vector<GroupTensors> found,
                          check_metadata_against_header(*metadata, header));
    in_this_shard(std::move(found), s, groups);
    report.kind = CheckpointKind::kDf11;
    bool listed = false;
    for (const SourceFile& source : metadata->sources) {
      if (source.file == file) {
        report.original_file_bytes += source.size;
        listed = true;
      }
    }
    all_sources_known = all_sources_known && listed;
  } else {
    if (published) {
      for (const FolderGroup& g : published->groups) {
        if (g.file() == s) groups.push_back(g);
      }
    } else {  // another shard has df11 metadata: this one's groups lie in it
      DF11_ASSIGN_OR_RETURN(std::vector<GroupTensors> found, enumerate_groups(header));
      in_this_shard(std::move(found), s, groups);
    }
    all_sources_known = false;
  }

  std::unordered_set<const TensorInfo*> stored;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const GroupTensors& gt = groups[gi].tensors;
    for (const TensorInfo* t : gt.all()) stored.insert(t);
    if (gt.guard != nullptr) stored.insert(gt.guard);  // spec 6.5: no data, not a raw tensor
    GroupReport g;
    g.name = gt.name;
    g.file = file;
    g.n_elements = gt.sign_mantissa->byte_size();
    g.bytes.luts = gt.luts->byte_size();
    g.bytes.encoded_exponent = gt.encoded_exponent->byte_size();
    g.bytes.sign_mantissa = gt.sign_mantissa->byte_size();
    g.bytes.output_positions = gt.output_positions->byte_size();
    g.bytes.gaps = gt.gaps->byte_size();
    g.bytes.split_positions = gt.split_positions->byte_size();
    g.counts_known = false;
    if (metadata) {
      for (const MemberMeta& m : metadata->groups[gi].members) {
        g.members.push_back(MemberReport{m.name, m.shape, m.n_elements});
        if (!m.alias_of.empty()) g.alias_of = m.alias_of;
      }
    } else {
      const size_t n_members = g.bytes.split_positions / 8 + 1;
      const std::vector<std::string> names =
          names_from_pattern_dict(pattern_dict, gt.name, n_members);
      for (size_t m = 0; m < n_members; ++m) {
        g.members.push_back(MemberReport{names.empty() ? "" : names[m], {}, 0});
      }
    }
    report.groups.push_back(std::move(g));
  }
  // spec 5.4: with metadata, every other tensor is listed as raw; without, it is by default.
  for (const TensorInfo& t : header.tensors) {
    if (!stored.contains(&t) && !(published && published->stored.contains(&t)))
      report.raw.push_back(RawTensorReport{t.name, file, t.dtype, t.byte_size()});
  }
  return Status::ok();
}

// describe_shard, then every group validated and decoded once to count its exponents.
Status analyze_shard(const ModelFolder& folder, size_t s,
                     const std::optional<nlohmann::ordered_json>& pattern_dict,
                     const std::optional<PublishedGroups>& published, InspectReport& report,
                     bool& all_sources_known, const CancelToken& cancel) {
  const SafetensorsFile& shard = folder.shards[s];
  const std::string& file = folder.shard_names[s];
  const size_t first = report.groups.size();
  std::vector<FolderGroup> groups;
  bool has_metadata = false;
  DF11_RETURN_IF_ERROR(describe_shard(shard.header(), s, file, pattern_dict, published, report,
                                      all_sources_known, groups, has_metadata));
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const GroupTensors& gt = groups[gi].tensors;
    const std::string what = file + ": group '" + gt.name + "'";
    const GroupView view = published_group_view(groups[gi], folder.shards);
    DF11_ASSIGN_OR_RETURN(const GroupInfo info, validate_group(view, what));
    DF11_ASSIGN_OR_RETURN(const Histogram counts, count_exponents(view, info, what, cancel));
    const auto tensors = gt.all();
    for (size_t i = 0; i < tensors.size(); ++i) {
      folder.shards[groups[gi].file_of[i]].release(*tensors[i]);
    }

    GroupReport& g = report.groups[first + gi];
    g.n_elements = info.n_elements;
    std::array<uint8_t, 256> lengths{};
    std::copy(std::begin(info.code_lengths), std::end(info.code_lengths), lengths.begin());
    g.code = make_code_stats(counts, lengths, info.n_luts);
    g.counts_known = true;
    g.max_block_weights = info.max_block_weights;
    g.max_block_weights_exact = true;
    if (!has_metadata) {
      // No metadata: the member sizes are where split_positions cuts the group.
      const std::vector<uint64_t> sizes = member_sizes(view, info.n_elements);
      for (size_t m = 0; m < sizes.size() && m < g.members.size(); ++m) {
        g.members[m].n_elements = sizes[m];
      }
    }
  }
  return Status::ok();
}

}  // namespace

bool is_df11_header(const SafetensorsHeader& header) {
  if (header.metadata_value(kDf11MetadataKey) != nullptr) return true;
  for (const TensorInfo& t : header.tensors) {
    if (t.name.ends_with(group_tensor(GroupTensor::kEncodedExponent).suffix)) return true;
  }
  return false;
}

bool is_df11_checkpoint(const ModelFolder& folder) {
  for (const SafetensorsFile& shard : folder.shards) {
    if (is_df11_header(shard.header())) return true;
  }
  return false;
}

Result<std::optional<nlohmann::ordered_json>> df11_pattern_dict(
    const std::optional<std::string>& config_text) {
  if (!config_text) return std::optional<nlohmann::ordered_json>();
  return read_pattern_dict(*config_text, kConfigFile);
}

Status describe_df11_checkpoint(const std::vector<const SafetensorsHeader*>& headers,
                                const std::vector<std::string>& names,
                                const std::optional<std::string>& config_text,
                                const std::string& where, InspectReport& report) {
  report.kind = CheckpointKind::kDf11NoMetadata;
  DF11_ASSIGN_OR_RETURN(const auto pattern_dict, df11_pattern_dict(config_text));
  DF11_ASSIGN_OR_RETURN(const auto published, published_groups(headers, where));
  bool all_sources_known = true;
  for (size_t s = 0; s < headers.size(); ++s) {
    std::vector<FolderGroup> groups;
    bool has_metadata = false;
    DF11_RETURN_IF_ERROR(describe_shard(*headers[s], s, names[s], pattern_dict, published, report,
                                        all_sources_known, groups, has_metadata));
  }
  if (!all_sources_known) report.original_file_bytes = 0;
  return Status::ok();
}

Status analyze_df11_checkpoint(const ModelFolder& folder, InspectReport& report,
                               const CancelToken& cancel) {
  report.kind = CheckpointKind::kDf11NoMetadata;
  DF11_ASSIGN_OR_RETURN(const auto pattern_dict, df11_pattern_dict(folder.config_text));
  std::vector<const SafetensorsHeader*> headers;
  for (const SafetensorsFile& shard : folder.shards) headers.push_back(&shard.header());
  DF11_ASSIGN_OR_RETURN(const auto published, published_groups(headers, folder.dir.string()));
  bool all_sources_known = true;
  for (size_t s = 0; s < folder.shards.size(); ++s) {
    DF11_RETURN_IF_ERROR(
        analyze_shard(folder, s, pattern_dict, published, report, all_sources_known, cancel));
  }
  if (!all_sources_known) report.original_file_bytes = 0;
  return Status::ok();
}

}  // namespace df11::app
