// Finding a DF11 group's six stored tensors in a safetensors header (spec 3.2), by name,
// with their dtypes and ranks checked. No codec logic: validate_group() (group.h) checks the
// contents.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "df11/group.h"
#include "df11/group_schema.h"
#include "df11/safetensors.h"
#include "df11/status.h"

namespace df11 {

// The stored tensors of one group. Pointers into the SafetensorsHeader they were found in:
// valid while that header lives and is not modified.
struct GroupTensors {
  std::string name;                              // the module path P
  const TensorInfo* luts = nullptr;              // U8 [n_luts, 256]
  const TensorInfo* encoded_exponent = nullptr;  // U8 [n_bytes]
  const TensorInfo* sign_mantissa = nullptr;     // U8 [n_elements]
  const TensorInfo* output_positions = nullptr;  // U8 [4 * (n_blocks + 1)]
  const TensorInfo* gaps = nullptr;              // U8 [gap bytes]
  const TensorInfo* split_positions = nullptr;   // I64 [n_members - 1]
  // The group's guard (spec 6.5): a U8 [0] tensor under a member's name, where the shard has
  // one. Not one of the six; set by check_metadata_against_header only.
  const TensorInfo* guard = nullptr;

  uint64_t n_elements() const { return sign_mantissa->n_elements; }
  // Members according to split_positions (its length + 1).
  uint64_t n_members() const { return split_positions->n_elements + 1; }
  // The six, in schema order (luts first), for loops over all of them.
  std::array<const TensorInfo*, kGroupTensorCount> all() const;
};

// Looks up the six "<P>.<suffix>" of kGroupTensors and checks them against that schema
// (spec 3.2): all six exist (kBadGroup), with the schema's dtypes (kBadDtype), luts shape
// [k, 256] with k >= 1, the others rank 1 (kBadShape). Messages name the file and the tensor.
Result<GroupTensors> find_group_tensors(const SafetensorsHeader& header, std::string_view name);

// A stored tensor as a GroupTensorLookup finds it, with the name of the file that holds it
// (for messages). `tensor` is nullptr where no file holds one of that name.
struct FoundTensor {
  const TensorInfo* tensor = nullptr;
  std::string_view file;
};
using GroupTensorLookup = std::function<Result<FoundTensor>(const std::string& tensor_name)>;

// find_group_tensors() over tensors that `lookup` finds, wherever they lie (one header, or
// every shard of a folder). A missing tensor is kBadGroup naming `where` and the group; an
// error `lookup` returns is passed on; the dtype and shape checks name the tensor's file.
Result<GroupTensors> find_group_tensors(std::string_view name, std::string_view where,
                                        const GroupTensorLookup& lookup);

// Every group in a header, found by its "<P>.encoded_exponent" tensor (for files without df11
// metadata, e.g. published DF11 models), in file order of those tensors. Each is checked as
// by find_group_tensors().
Result<std::vector<GroupTensors>> enumerate_groups(const SafetensorsHeader& header);

// A group of a folder without df11 metadata. Spec 7.8: its six stored tensors may lie in
// different shards of the folder (transformers' save_pretrained fills shards tensor by tensor).
struct FolderGroup {
  GroupTensors tensors;                             // pointers into the headers given
  std::array<size_t, kGroupTensorCount> file_of{};  // header index of each, in all() order

  // The header holding "<P>.encoded_exponent", by which the group was found.
  size_t file() const { return file_of[static_cast<size_t>(GroupTensor::kEncodedExponent)]; }
};

// Every group of a folder whose shards have `headers` (none with df11 metadata), found by its
// "<P>.encoded_exponent" tensor, shard by shard in file order of those tensors, each with its
// six tensors looked up in every shard and checked as by find_group_tensors(). A stored
// tensor name held by two shards is kDuplicateName; one held by none is kBadGroup; both
// messages name `where` (the folder) and the group.
Result<std::vector<FolderGroup>> enumerate_folder_groups(
    std::span<const SafetensorsHeader* const> headers, std::string_view where);

// The shape that stored tensor t of `bytes` bytes is written with (spec 3.2): luts
// [bytes / 256, 256], split_positions [bytes / 8], the others [bytes]. `bytes` must be a
// multiple of the row or element size (what the encoder's plan gives).
inline std::vector<uint64_t> group_tensor_shape(GroupTensor t, uint64_t bytes) {
  if (t == GroupTensor::kLuts) return {bytes / kLutRowSize, kLutRowSize};
  return {bytes / (dtype_bits(group_tensor(t).dtype) / 8)};
}

// Spans over the group's tensors inside `file_bytes` (the whole file the header was parsed
// from, e.g. SafetensorsFile::bytes()). Not validated: call validate_group().
GroupView group_view(const GroupTensors& group, std::span<const uint8_t> file_bytes);

// The same for a group whose tensors lie in several files: each of all()'s six inside its own
// file's bytes (`file_bytes[i]`, the whole file whose header holds tensor i).
GroupView group_view(const GroupTensors& group,
                     const std::array<std::span<const uint8_t>, kGroupTensorCount>& file_bytes);

}  // namespace df11
