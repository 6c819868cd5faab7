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
    shards[s].metadata.encoder = encoder;
    const SafetensorsHeader& header = source.header(s);
    shards[s].metadata.sources.push_back(SourceFile{source.shard_name(s), header.file_size,
                                                    std::string(kSha256HexLength, '0'),
                                                    header.header_text});
  }
  // shard_names are sorted: shard 0 is the lexicographically first.
  shards.front().metadata.side_files = std::move(side_files);

  // Which coded groups start at each tensor: one, or two when a tied copy (spec 5.3 G8)
  // codes the same tensor again.
  std::vector<std::vector<size_t>> groups_at(plan.order.size());
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    if (plan.groups[g].coded) groups_at[plan.groups[g].spec.members.front()].push_back(g);
  }
  auto push = [](ShardOut& out, ShardItem item) {
    item.first_tensor = out.items.empty() ? 0
                                          : out.items.back().first_tensor +
                                                (out.items.back().is_group ? kGroupTensorCount : 1);
    out.items.push_back(item);
  };
  for (size_t i = 0; i < plan.order.size(); ++i) {
    ShardOut& out = shards[plan.order[i].shard];
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
  return shards;
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
  return contents;
}

}  // namespace df11::app
