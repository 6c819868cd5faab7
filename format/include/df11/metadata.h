// The df11 metadata (spec 5): a JSON document stored as the string value of key "df11" in a
// DF11 shard's safetensors __metadata__. It names the original tensors of every group, their
// checksums, and what is needed to rebuild the original files byte for byte.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "df11/group_tensors.h"
#include "df11/safetensors.h"
#include "df11/status.h"

namespace df11 {

// spec 5.1: the __metadata__ key holding the document.
inline constexpr std::string_view kDf11MetadataKey = "df11";
// spec 5.1: the version this build writes; it reads any 1.x.
inline constexpr std::string_view kDf11SpecVersion = "1.3";
inline constexpr int kDf11SpecMajor = 1;
// spec 5.1: from this minor version on, a shard carries the header checksum
// (df11/header_checksum.h) and the first shard records the folder (shards, folder_files).
inline constexpr int kFolderRecordMinor = 1;
// spec 5.3 (1.2): from this minor version on, a member may be an alias (MemberMeta::alias_of).
inline constexpr int kAliasMinor = 2;
// The version whose writers add each group's guard (spec 6.5).
inline constexpr int kGuardMinor = 3;

// spec 5.3 limits (a shard's document is at most Max_Header_Bytes anyway; these keep every
// count far below what would exhaust memory).
inline constexpr size_t kMaxGroups = 100'000;          // Max_Groups per shard
inline constexpr size_t kMaxMembersPerGroup = 65'536;  // Max_Members_Per_Group
inline constexpr size_t kMaxRawTensors = kMaxTensors;  // Max_Raw_Tensors per shard
inline constexpr size_t kMaxSources = 4'096;           // Max_Sources per shard
inline constexpr size_t kMaxSideFiles = 4'096;         // Max_Side_Files per shard
inline constexpr size_t kMaxFileNameBytes = 255;       // Max_File_Name_Bytes (NAME_MAX)
inline constexpr size_t kMaxFolderFiles = 100'000;     // Max_Folder_Files (and shards) per folder
inline constexpr size_t kMaxFolderPathBytes = 4'096;   // Max_Folder_Path_Bytes (PATH_MAX)

// XXH3-64 (hex) of each stored tensor's bytes, as written (spec 5.2); `stored` in the
// document has one key per entry of kGroupTensors, named by its name() (spec 5.3).
struct StoredChecksums {
  std::string luts;
  std::string encoded_exponent;
  std::string sign_mantissa;
  std::string output_positions;
  std::string gaps;
  std::string split_positions;
  bool operator==(const StoredChecksums&) const = default;

  // The checksum of schema entry t (group_schema.h).
  std::string& of(GroupTensor t);
  const std::string& of(GroupTensor t) const;
};

// One original BF16 tensor inside a group, in concatenation order.
struct MemberMeta {
  std::string name;            // original tensor name, e.g. "model.layers.0.mlp.up_proj.weight"
  std::string dtype = "BF16";  // always "BF16" in spec 1.x
  std::vector<uint64_t> shape;
  uint64_t n_elements = 0;  // product(shape)
  std::string xxh3;         // XXH3-64 hex of the ORIGINAL tensor bytes
  // spec 5.3 (1.2): non-empty when this member is no tensor of the original files but a
  // coded copy of the tensor named here (a tied lm_head for the dfloat11 loader): same shape
  // and bytes, restored once, under that name only.
  std::string alias_of;
  bool operator==(const MemberMeta&) const = default;
};

struct GroupMeta {
  std::string name;         // module path P of the six stored tensors
  uint64_t n_elements = 0;  // sum of the members' n_elements
  std::vector<MemberMeta> members;
  StoredChecksums stored;
  bool operator==(const GroupMeta&) const = default;
};

// A tensor stored unchanged (not in any group).
struct RawTensorMeta {
  std::string name;
  std::string xxh3;  // of its bytes (identical in the original and the DF11 shard)
  bool operator==(const RawTensorMeta&) const = default;
};

// An original .safetensors file that can be rebuilt from this shard.
struct SourceFile {
  std::string file;   // base name, e.g. "model-00001-of-00002.safetensors"
  uint64_t size = 0;  // bytes
  // SHA-256 of the whole original file (provenance: the Hub's LFS oid), or empty when the
  // writer did not record it (spec 5.3, 1.2: optional; header and tensor checksums already
  // fix every byte of the rebuilt file, spec 7.6).
  std::string sha256;
  std::string header;  // its exact header text (N bytes, padding included)
  bool operator==(const SourceFile&) const = default;
};

// An original non-safetensors file whose bytes the DF11 folder changes (config.json, ...).
struct SideFile {
  std::string file;   // base name
  uint64_t size = 0;  // bytes == content.size()
  std::string sha256;
  std::string content;  // exact original bytes (valid UTF-8: it travels as a JSON string)
  bool operator==(const SideFile&) const = default;
};

// A file of the DF11 folder itself other than its shards (spec 5.3 folder_files, 1.1):
// config.json and the index as df11 wrote them, every file copied unchanged.
struct FolderFile {
  std::string file;   // path relative to the folder, '/'-separated ("original/params.json")
  uint64_t size = 0;  // bytes
  std::string sha256;
  bool operator==(const FolderFile&) const = default;
};

struct Df11Metadata {
  std::string spec_version = std::string(kDf11SpecVersion);
  std::string encoder;                 // e.g. "df11 0.1.0"
  std::vector<GroupMeta> groups;       // in the order written
  std::vector<RawTensorMeta> tensors;  // sorted by name (serialize sorts, parse returns sorted)
  std::vector<SourceFile> sources;
  std::vector<SideFile> side_files;
  // spec 5.3 (1.1): the folder record, in the lexicographically first shard only (absent, not
  // empty, in the others). shards: every DF11 shard's file name, sorted; folder_files: every
  // other file of the folder, sorted by path.
  std::optional<std::vector<std::string>> shards;
  std::optional<std::vector<FolderFile>> folder_files;
  bool operator==(const Df11Metadata&) const = default;
};

// MINOR of a spec_version that parse_df11_metadata() accepted ("1.1" -> 1).
int spec_minor_version(std::string_view spec_version);

// Parses and validates the document (spec 5.3). Unknown top-level keys are ignored (a later
// 1.x may add some); unknown keys anywhere else are errors. `file_name` prefixes messages.
// Codes: kBadJson (not JSON), kUnsupported (spec_version major != 1), kBadMetadata (missing
// or mistyped field, bad hex, unsafe file name, inconsistent counts), kBadDtype (member dtype
// not "BF16"), kBadShape (n_elements != product(shape)), kOverflow, kDuplicateName (a group,
// tensor, source or side file name twice), kResourceLimit (a Max_* limit exceeded).
Result<Df11Metadata> parse_df11_metadata(std::string_view json_text, const std::string& file_name);

// Deterministic compact JSON: fixed key order, raw tensors sorted by name. It does not check
// the schema, but parse_df11_metadata(serialize_df11_metadata(m)) == m for every m that
// parse_df11_metadata() can return. kInvalidArgument if a string is not valid UTF-8 (JSON
// cannot carry it; e.g. a side file that is not UTF-8 text).
Result<std::string> serialize_df11_metadata(const Df11Metadata& metadata);

// The parsed "df11" __metadata__ entry of a shard, or nullopt if the shard has none (e.g. a
// published DF11 model).
Result<std::optional<Df11Metadata>> read_df11_metadata(const SafetensorsHeader& header);

// Checks one group's metadata against the shard's header (spec 5.4): the six stored tensors
// exist with the right dtypes and ranks (find_group_tensors), sign_mantissa has n_elements
// bytes and split_positions has members - 1 entries (kBadGroup).
Result<GroupTensors> check_group_against_header(const GroupMeta& group,
                                                const SafetensorsHeader& header);

// The whole document against the header (spec 5.4): every group as above, every raw tensor
// present (kBadMetadata), and every header tensor either stored by exactly one group, listed
// as raw, or a group's guard (kBadMetadata). Returns the groups' tensors in metadata order,
// each with its guard where the shard has one.
Result<std::vector<GroupTensors>> check_metadata_against_header(const Df11Metadata& metadata,
                                                                const SafetensorsHeader& header);

// spec 6.5: the shape and dtype of a guard, the empty tensor a DF11 shard holds under the name
// of one member of each group so that a loader that does not know DF11 refuses the file.
bool is_guard_tensor(const TensorInfo& t);

// spec 6.5: the member of `group` whose name its guard takes (the first without alias_of), or
// nullptr where every member is an alias.
const MemberMeta* guarded_member(const GroupMeta& group);

// spec 5.3: a name usable as a file in the output folder: 1..Max_File_Name_Bytes bytes, not
// "." or "..", no '/' or NUL. Guards decompression against path traversal.
bool is_safe_file_name(std::string_view name);

// spec 5.3: a relative path inside the folder: 1..Max_Folder_Path_Bytes bytes, components
// separated by single '/', each a safe file name (no empty, "." or ".." component, no NUL).
bool is_safe_relative_path(std::string_view path);

}  // namespace df11
