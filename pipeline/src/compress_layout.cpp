#include "compress_layout.h"

#include <cstdint>
#include <utility>

#include "df11/group_schema.h"
#include "df11/hash.h"
#include "df11/header_checksum.h"
#include "group_writer.h"

namespace df11::app {
namespace {

std::string xxh3_placeholder() { return std::string(kXxh3HexLength, '0'); }

GroupMeta group_meta(const CheckpointSource& source, const CompressPlan& plan,
                     const PlannedGroup& g) {
  GroupMeta meta;
  meta.name = g.spec.name;
  meta.n_elements = g.plan.n_elements;
  for (size_t m : g.spec.members) {
    const TensorInfo& t = source.tensor(plan.order[m]);
    MemberMeta member{t.name, "BF16", t.shape, t.n_elements, xxh3_placeholder(), ""};
    if (!g.spec.alias_name.empty()) {
      // spec 5.3 G8: the copy is named as the loader's module, and says what it copies.
      member.alias_of = std::move(member.name);
      member.name = g.spec.alias_name;
    }
    meta.members.push_back(std::move(member));
  }
  const std::string p = xxh3_placeholder();
  meta.stored = StoredChecksums{p, p, p, p, p, p};
  return meta;
}

}  // namespace

std::vector<ShardOut> assign_shards(const CheckpointSource& source, const CompressPlan& plan,
                                    std::vector<SideFile> side_files, const std::string& encoder) {
  std::vector<ShardOut> shards(source.shard_count());
  for (size_t s = 0; s < shards.size(); ++s) {
    shards[s].shard = s;
    shards[s].source_shards.push_back(s);
    shards[s].metadata.encoder = encoder;
    const SafetensorsHeader& header = source.header(s);
    shards[s].metadata.sources.push_back(SourceFile{source.shard_name(s), header.file_size,
                                                    std::string(kSha256HexLength, '0'),
                                                    header.header_text});
  }

  // Which coded groups start at each tensor: one, or two when a tied copy (spec 5.3 G8)
  // codes the same tensor again. And the coded group each member belongs to (not its tied
  // copy's: that one codes a tensor whose own group is listed too).
  std::vector<std::vector<size_t>> groups_at(plan.order.size());
  std::vector<size_t> member_of(plan.order.size(), SIZE_MAX);
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    if (!plan.groups[g].coded) continue;
    groups_at[plan.groups[g].spec.members.front()].push_back(g);
    if (!plan.groups[g].spec.alias_name.empty()) continue;
    for (size_t m : plan.groups[g].spec.members) member_of[m] = g;
  }
  auto push = [](ShardOut& out, ShardItem item) {
    item.first_tensor = out.items.empty() ? 0
                                          : out.items.back().first_tensor +
                                                (out.items.back().is_group ? kGroupTensorCount : 1);
    out.items.push_back(item);
  };
  // The output shard that holds each input shard's first tensor (its own, or the one of the
  // group that tensor joined).
  std::vector<size_t> first_home(shards.size(), SIZE_MAX);
  for (size_t i = 0; i < plan.order.size(); ++i) {
    const size_t s = plan.order[i].shard;
    ShardOut& out = shards[s];
    if (first_home[s] == SIZE_MAX) {
      first_home[s] = member_of[i] == SIZE_MAX ? s : plan.groups[member_of[i]].shard;
    }
    if (plan.raw[i]) {
      push(out, ShardItem{false, i, out.metadata.tensors.size(), 0});
      out.metadata.tensors.push_back(
          RawTensorMeta{source.tensor(plan.order[i]).name, xxh3_placeholder()});
    }
    for (size_t g : groups_at[i]) {
      push(out, ShardItem{true, g, out.metadata.groups.size(), 0});
      out.metadata.groups.push_back(group_meta(source, plan, plan.groups[g]));
    }
  }

  // spec 7.5: an input shard left with no tensor (all joined groups that start in an earlier
  // shard) gets no DF11 shard; its source record goes to the shard holding its first tensor.
  // A header-only file would be named by no index, and so be no shard of the folder.
  size_t first_kept = SIZE_MAX;
  for (size_t s = 0; s < shards.size() && first_kept == SIZE_MAX; ++s) {
    if (!shards[s].items.empty()) first_kept = s;
  }
  if (first_kept == SIZE_MAX) first_kept = 0;  // no tensor at all: keep the first file
  std::vector<ShardOut> kept;
  for (size_t s = 0; s < shards.size(); ++s) {
    if (!shards[s].items.empty() || s == first_kept) continue;
    size_t home = first_home[s] == SIZE_MAX ? first_kept : first_home[s];
    if (shards[home].items.empty() && home != first_kept) home = first_kept;
    shards[home].source_shards.push_back(s);
    shards[home].metadata.sources.push_back(std::move(shards[s].metadata.sources.front()));
  }
  for (ShardOut& out : shards) {
    if (!out.items.empty() || out.shard == first_kept) kept.push_back(std::move(out));
  }
  // The lexicographically first DF11 shard carries the side files (and the folder record).
  kept.front().metadata.side_files = std::move(side_files);
  return kept;
}

Result<FinalizedLayout> lay_out_shard(const CheckpointSource& source, const CompressPlan& plan,
                                      const ShardOut& out) {
  SafetensorsLayout layout;
  for (const ShardItem& item : out.items) {
    if (!item.is_group) {
      const TensorInfo& t = source.tensor(plan.order[item.index]);
      DF11_RETURN_IF_ERROR(layout.add_tensor(t.name, t.dtype, t.shape, t.byte_size()));
      continue;
    }
    const PlannedGroup& g = plan.groups[item.index];
    // spec 3.2: the six stored tensors with the schema's dtypes and shapes.
    const std::array<uint64_t, kGroupTensorCount> sizes = stored_sizes(g.plan);
    for (const GroupTensorSpec& t : kGroupTensors) {
      const uint64_t bytes = sizes[static_cast<size_t>(t.id)];
      DF11_RETURN_IF_ERROR(layout.add_tensor(group_tensor_name(g.spec.name, t.id), t.dtype,
                                             group_tensor_shape(t.id, bytes), bytes));
    }
  }
  // spec 6.5: each group's guard, after every other tensor (no item's position moves; no bytes).
  for (const std::string& name : guard_names(out)) {
    DF11_RETURN_IF_ERROR(layout.add_tensor(name, Dtype::kU8, {0}, 0));
  }
  const SafetensorsHeader& original = source.header(out.shard);
  MetadataEntries entries = original.metadata;
  for (const auto& [key, value] : entries) {
    if (key == kDf11MetadataKey || key == kHeaderChecksumKey) {
      return Status(ErrorCode::kInvalidArgument, source.shard_name(out.shard) +
                                                     ": already has df11 metadata ('" + key +
                                                     "': the input is a DF11 model)");
    }
  }
  auto text = serialize_df11_metadata(out.metadata);
  if (!text) return text.status().with_context(source.shard_name(out.shard) + ": df11 metadata");
  // spec 5.1: the original entries, then "df11", then the header checksum (5.2).
  entries.emplace_back(std::string(kDf11MetadataKey), std::move(text).value());
  entries.emplace_back(std::string(kHeaderChecksumKey), std::string(kHeaderChecksumPlaceholder));
  DF11_RETURN_IF_ERROR(layout.set_metadata(std::move(entries)));
  auto finalized = layout.finalize();
  if (!finalized) return finalized.status().with_context(source.shard_name(out.shard));
  Status stamped = stamp_header_checksum(*finalized);
  if (!stamped) return stamped.with_context(source.shard_name(out.shard));
  return finalized;
}

ShardContents shard_contents(const CheckpointSource& source, const CompressPlan& plan,
                             const ShardOut& out) {
  ShardContents contents;
  for (const ShardItem& item : out.items) {
    if (!item.is_group) {
      const TensorInfo& t = source.tensor(plan.order[item.index]);
      contents.tensor_names.push_back(t.name);
      contents.tensor_bytes += t.byte_size();
      continue;
    }
    const PlannedGroup& group = plan.groups[item.index];
    for (const GroupTensorSpec& t : kGroupTensors) {
      contents.tensor_names.push_back(group_tensor_name(group.spec.name, t.id));
    }
    for (uint64_t bytes : stored_sizes(group.plan)) contents.tensor_bytes += bytes;
  }
  for (std::string& name : guard_names(out)) contents.tensor_names.push_back(std::move(name));
  return contents;
}

std::vector<std::string> guard_names(const ShardOut& out) {
  std::vector<std::string> names;
  for (const ShardItem& item : out.items) {
    if (!item.is_group) continue;
    const MemberMeta* m = guarded_member(out.metadata.groups[item.meta_index]);
    if (m != nullptr) names.push_back(m->name);
  }
  return names;
}

}  // namespace df11::app
