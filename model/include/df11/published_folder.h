// A DF11 folder published by the dfloat11 tools (no df11 metadata, spec 7.8), read for decoding:
// config.json's pattern_dict names the weights each group holds, split_positions their element
// counts, and config.json (or a folder with the same tensor names) their shapes. Used by
// decompress (pipeline/, which restores a BF16 checkpoint from it) and by the C API
// (df11_model_open), which decodes it like a df11 folder, without checksums to compare.
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "df11/df11_folder.h"
#include "df11/group_tensors.h"
#include "df11/member_shapes.h"
#include "df11/model_folder.h"
#include "df11/status.h"

namespace df11::app {

// One tensor of a published shard: a group member (decoded) or a tensor stored as it is.
struct RestoredTensor {
  std::string name;
  std::vector<uint64_t> shape;
  OriginalTensor source;  // is_member: group and member of PublishedFolder::folder
};

// A published folder: its groups as a Df11Folder without metadata (no checksums recorded)
// and, per shard, the tensors it holds, in name order.
struct PublishedFolder {
  Df11Folder folder;
  std::vector<std::vector<RestoredTensor>> shards;
  std::optional<std::string> dropped_head;  // (decompress) a tied head identical to its embedding
  std::string tie_note;                     // (decompress) what was done about a tied head
};

// The groups of a published folder whose shards have `headers`, each group's six stored tensors
// found across all the shards (spec 7.8: enumerate_folder_groups; messages name `where`), and
// every stored tensor of them, whichever shard holds it (the others are raw tensors).
struct PublishedGroups {
  std::vector<FolderGroup> groups;  // shard by shard, as their encoded_exponent tensors lie
  // The groups' six stored tensors, and the guards (spec 6.5, 7.8): U8 [0] tensors named
  // "P.<...>" for a group P. Every other tensor of the folder is raw.
  std::unordered_set<const TensorInfo*> stored;
};
Result<PublishedGroups> find_published_groups(const std::vector<const SafetensorsHeader*>& headers,
                                              const std::string& where);
Result<PublishedGroups> find_published_groups(const ModelFolder& model);

// Spans over a published group's stored tensors, each inside the mapping of the shard (of
// `shards`, the folder's) that holds it. Not validated: call validate_group().
GroupView published_group_view(const FolderGroup& group,
                               const std::vector<SafetensorsFile>& shards);

// Reads `model`'s groups (find_published_groups: a group's stored tensors may lie in any of
// its shards) with config.json's pattern_dict, validates every group
// (validate_group: tables, gaps, output positions, split positions) and gives every member a
// shape from `shapes`. kBadConfig without a usable pattern_dict; kUnsupported naming the
// weights whose shapes are unknown (`unknown_hint` says what the caller can do about it);
// kBadShape where a shape disagrees with the element count the group holds; kBadGroup where
// pattern_dict and split_positions disagree; every message names the file and the group.
Result<PublishedFolder> read_published_folder(ModelFolder model, const MemberShapes& shapes,
                                              const std::string& unknown_hint);

}  // namespace df11::app
