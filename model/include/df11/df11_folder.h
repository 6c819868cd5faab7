// A DF11 model folder written by df11, opened for reading: every shard with its df11
// metadata checked against its header, every coded group, and where the bytes of each
// original tensor come from (a member of a group, or a raw tensor).
#pragma once

#include <array>
#include <cstddef>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "df11/group.h"
#include "df11/group_tensors.h"
#include "df11/metadata.h"
#include "df11/model_folder.h"

namespace df11::app {

struct CodedGroup {
  size_t shard = 0;       // the shard holding "<P>.encoded_exponent"
  size_t meta_index = 0;  // into Df11Folder::metadata[shard].groups
  // The shard holding each stored tensor, in GroupTensors::all() order: `shard` for all six in
  // a df11 folder; a published folder's group may span shards (spec 7.8).
  std::array<size_t, kGroupTensorCount> tensor_shard{};
  GroupTensors tensors;                // pointers into the headers of tensor_shard's shards
  GroupView view;                      // spans over those shards' mappings
  std::vector<uint64_t> member_start;  // element offset of each member; back() = n_elements
  std::string what;                    // "model.safetensors: group 'model.layers.0'"
};

// Where an original tensor's bytes come from.
struct OriginalTensor {
  bool is_member = false;
  size_t group = 0;    // is_member: index into Df11Folder::groups
  size_t member = 0;   // is_member: index among the group's members
  TensorLocation raw;  // !is_member: the tensor in the DF11 folder
  std::string xxh3;    // recorded checksum of its original bytes
  uint64_t byte_size = 0;
};

// spec 5.3 (1.2): a member that is a coded copy of another tensor (a tied lm_head). It is no
// original tensor (not in `originals`): restoration skips it, verify decodes it and checks
// it against the tensor it copies.
struct AliasMember {
  size_t group = 0;    // index into Df11Folder::groups
  size_t member = 0;   // index among the group's members
  std::string name;    // the member's name ("lm_head.weight")
  std::string target;  // the original tensor it copies ("model.embed_tokens.weight")
};

struct SourceRef {
  size_t shard = 0;  // whose metadata lists it
  size_t index = 0;  // into metadata[shard].sources
};

struct Df11Folder {
  ModelFolder folder;
  std::vector<Df11Metadata> metadata;  // per shard
  // Per shard: the whole-header checksum (spec 5.2) matched, or why not (kCorruptData on a
  // mismatch, kBadMetadata if a 1.1 shard has none). Verify reports these and goes on, so
  // that the fields a corruption changed are named too; decompress refuses the folder.
  std::vector<Status> header_checks;
  std::vector<CodedGroup> groups;  // shard by shard, metadata order
  std::unordered_map<std::string, OriginalTensor> originals;
  std::vector<AliasMember> aliases;  // shard by shard, metadata order
  std::vector<SourceRef> sources;    // sorted by file name
  std::vector<SideFile> side_files;  // from every shard's metadata

  const SourceFile& source(const SourceRef& ref) const {
    return metadata[ref.shard].sources[ref.index];
  }
  const MemberMeta& member_meta(const OriginalTensor& t) const {
    const CodedGroup& g = groups[t.group];
    return metadata[g.shard].groups[g.meta_index].members[t.member];
  }
  // "model-00001.safetensors: tensor 'x'" or "...: group 'P': member 'x'" for messages.
  std::string describe(const std::string& name, const OriginalTensor& t) const;
};

// True if at least one shard of the folder carries df11 metadata.
bool has_df11_metadata(const ModelFolder& folder);

// True if a shard holds a DF11 group (a "<P>.encoded_exponent" tensor), df11's or one the
// dfloat11 tools published, or config.json has a dfloat11_config: the folder is DF11.
bool is_df11_model(const ModelFolder& folder);

// What verify and decompress say of a folder that holds no DF11 group (kBadGroup): it is not
// a DF11 folder, and how to compress it.
Status not_a_df11_folder(const std::filesystem::path& dir);

// True if a shard carries df11 metadata or config.json carries df11's marker (spec 7.2).
// Either makes every shard need its metadata, so that a corrupted "df11" key cannot turn a
// df11 folder into a published one whose checksums nobody checks.
bool written_by_df11(const ModelFolder& folder);

// Reads and cross-checks the metadata of every shard (each must have it: kBadMetadata
// "written by df11 but has no df11 metadata" otherwise). kDuplicateName if a tensor, source
// or side file appears twice; kBadMetadata if an alias member (spec 5.3 G8) names no tensor
// of the folder, or one of another shape or checksum. When a shard's header checksum fails, an
// error found while interpreting that header is reported as kCorruptData with the checksum's
// message first.
Result<Df11Folder> open_df11_folder(ModelFolder folder);

// The first failed header check of `folder.header_checks`, or OK.
Status first_header_failure(const Df11Folder& folder);

// config.json and the index of a DF11 folder are df11's own; the originals must be recorded
// as side files, or decompress could not give them back. kBadMetadata naming the file. (A
// config.json df11 wrote for a checkpoint that had none needs no original: see below.)
Status check_side_files_recorded(const Df11Folder& folder);

// spec 7.2: config.json was written by df11 for a checkpoint that had none (a single
// .safetensors file): no side file records an original of it, and it holds nothing but
// dfloat11_config. Restoration does not write it.
bool config_written_for_the_loader(const Df11Folder& folder);

}  // namespace df11::app
