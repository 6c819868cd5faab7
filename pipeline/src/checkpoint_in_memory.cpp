// A checkpoint described in memory (compress.h): one tensor's checks, and splitting tensors
// into shards the way huggingface_hub does.
#include <cstdio>
#include <map>

#include "df11/compress.h"
#include "df11/model_config.h"
#include "df11/model_folder.h"
#include "df11/utf8.h"

namespace df11::app {

Status check_checkpoint_tensor(const CheckpointTensor& tensor) {
  if (tensor.name.empty()) return Status(ErrorCode::kInvalidArgument, "a tensor has no name");
  const std::string what = "tensor '" + tensor.name + "'";
  if (!is_valid_utf8(tensor.name)) {
    return Status(ErrorCode::kInvalidArgument, what + ": the name is not valid UTF-8");
  }
  if (tensor.name == kMetadataKey) {
    return Status(ErrorCode::kInvalidArgument,
                  what + ": the name is reserved (safetensors' metadata key)");
  }
  if (tensor.shape.size() > kMaxRank) {
    return Status(ErrorCode::kResourceLimit, what + ": " + std::to_string(tensor.shape.size()) +
                                                 " dimensions, at most " +
                                                 std::to_string(kMaxRank));
  }
  auto bytes = tensor_byte_size(tensor.dtype, tensor.shape);
  if (!bytes) return bytes.status().with_context(what);
  if (*bytes != tensor.byte_size) {
    return Status(ErrorCode::kBadShape, what + ": " + dtype_name(tensor.dtype) + " " +
                                            shape_to_string(tensor.shape) + " is " +
                                            std::to_string(*bytes) + " bytes, but " +
                                            std::to_string(tensor.byte_size) + " were given");
  }
  if (tensor.byte_size != 0 && tensor.data == nullptr && !tensor.read) {
    return Status(ErrorCode::kInvalidArgument, what + ": neither bytes nor a reader given");
  }
  return Status::ok();
}

Status shard_checkpoint(std::vector<CheckpointTensor> tensors, uint64_t max_shard_bytes,
                        CheckpointInMemory& checkpoint) {
  if (!checkpoint.shards.empty()) {
    return Status(ErrorCode::kInvalidArgument,
                  "the checkpoint has shards already: give every tensor a shard file, or none");
  }
  for (const auto& [name, text] : checkpoint.files) {
    if (name == kIndexFile || name == kDiffusersIndexFile) {
      return Status(ErrorCode::kInvalidArgument,
                    name +
                        ": an index given with tensors that name no shard file (the shards "
                        "are made here, and their index with them)");
    }
  }
  if (tensors.empty()) return Status(ErrorCode::kInvalidArgument, "the checkpoint has no tensors");
  const uint64_t limit = max_shard_bytes == 0 ? UINT64_MAX : max_shard_bytes;
  // huggingface_hub's split_torch_state_dict_into_shards: a tensor above the limit goes into
  // a shard of its own (placed before the one being filled); otherwise a new shard starts when
  // the tensor would take the current one over the limit.
  std::vector<std::vector<CheckpointTensor>> groups;
  std::vector<CheckpointTensor> current;
  uint64_t current_bytes = 0;
  uint64_t total_bytes = 0;
  for (CheckpointTensor& t : tensors) {
    total_bytes += t.byte_size;
    if (t.byte_size > limit) {
      groups.emplace_back().push_back(std::move(t));
      continue;
    }
    if (current_bytes + t.byte_size > limit && !current.empty()) {
      groups.push_back(std::move(current));
      current.clear();
      current_bytes = 0;
    }
    current_bytes += t.byte_size;
    current.push_back(std::move(t));
  }
  if (!current.empty()) groups.push_back(std::move(current));

  const MetadataEntries pt{{"format", "pt"}};
  std::map<std::string, std::string> weight_map;
  for (size_t k = 0; k < groups.size(); ++k) {
    CheckpointShard shard;
    if (groups.size() == 1) {
      shard.name = "model.safetensors";
    } else {
      char name[64];
      std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", k + 1, groups.size());
      shard.name = name;
    }
    for (const CheckpointTensor& t : groups[k]) weight_map[t.name] = shard.name;
    shard.tensors = std::move(groups[k]);
    shard.metadata = pt;
    checkpoint.shards.push_back(std::move(shard));
  }
  if (checkpoint.shards.size() > 1) {
    DF11_ASSIGN_OR_RETURN(std::string index, make_index(std::nullopt, weight_map, total_bytes));
    checkpoint.files.emplace_back(kIndexFile, std::move(index));
  }
  return Status::ok();
}

}  // namespace df11::app
