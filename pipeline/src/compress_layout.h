// What each DF11 output shard holds, in file order, and its safetensors header. Output
// shards keep the input shards' names; a coded group goes to the shard of its first member,
// a raw tensor stays in its own shard, and an input shard left with no tensor gets no output
// shard. The header (with the df11 metadata) is laid
// out first with placeholder checksums of the final length, so that data can be written at
// its final offsets before the checksums are known; the real header then has the same size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint_source.h"
#include "compress_plan.h"
#include "df11/metadata.h"
#include "df11/safetensors.h"

namespace df11::app {

struct ShardItem {
  bool is_group = false;
  size_t index = 0;         // into CompressPlan::groups, or into CompressPlan::order (raw)
  size_t meta_index = 0;    // into metadata.groups, or into metadata.tensors (raw)
  size_t first_tensor = 0;  // its (first) tensor's position in the layout's insertion order
};

struct ShardOut {
  size_t shard = 0;  // the input shard of the same name
  std::vector<ShardItem> items;
  Df11Metadata metadata;  // checksums are placeholders until pass 2 fills them in
  // The input shard of each of metadata.sources: its own first, then those of input shards
  // that got no DF11 shard of their own.
  std::vector<size_t> source_shards;
};

// One ShardOut per input shard that holds a tensor in the output, in input order (spec 7.5).
// An input shard whose tensors all joined groups that start in an earlier shard gets none:
// its source record goes to the shard holding its first tensor. `side_files` (config.json,
// index: original bytes) go to the lexicographically first output shard. `encoder` is the
// metadata's encoder string.
std::vector<ShardOut> assign_shards(const CheckpointSource& source, const CompressPlan& plan,
                                    std::vector<SideFile> side_files, const std::string& encoder);

// The shard's header for its current metadata, with its whole-header checksum (spec 5.2)
// filled in. kInvalidArgument if the original __metadata__ already has a "df11" or
// "df11_header_xxh3" key (the input is a DF11 model).
Result<FinalizedLayout> lay_out_shard(const CheckpointSource& source, const CompressPlan& plan,
                                      const ShardOut& out);

// The names of the shard's guards (spec 6.5): for each group, its first member without alias_of.
std::vector<std::string> guard_names(const ShardOut& out);

// What a shard will hold, known from the plan before anything is written: its tensors' names
// (each group's six, each raw tensor, each guard) and their total bytes. The index needs them, and
// the index is written (and recorded in the first shard's folder_files) before any shard.
struct ShardContents {
  std::vector<std::string> tensor_names;
  uint64_t tensor_bytes = 0;
};
ShardContents shard_contents(const CheckpointSource& source, const CompressPlan& plan,
                             const ShardOut& out);

}  // namespace df11::app
