// A checkpoint folder on disk, either kind (Hugging Face BF16 or DF11): its shards
// (memory-mapped and validated: the top-level *.safetensors files, or with
// model.safetensors.index.json the ones its weight_map names), config.json, the index and
// every other file ("side files", copied unchanged by compress and decompress).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "df11/cancel.h"
#include "df11/safetensors.h"
#include "df11/status.h"

namespace df11::app {

inline constexpr const char* kConfigFile = "config.json";
inline constexpr const char* kIndexFile = "model.safetensors.index.json";
// A diffusers component's index (transformer/, unet/, text_encoder_2/ of a pipeline).
inline constexpr const char* kDiffusersIndexFile = "diffusion_pytorch_model.safetensors.index.json";
// config.json and the index are parsed whole; bigger ones are not plausible.
inline constexpr uint64_t kMaxConfigBytes = 64ull << 20;
inline constexpr uint64_t kMaxIndexBytes = 512ull << 20;

struct TensorLocation {
  size_t shard = 0;   // index into ModelFolder::shards
  size_t tensor = 0;  // index into that shard's header().tensors
};

struct ModelFolder {
  std::filesystem::path dir;
  std::vector<std::string> shard_names;    // top-level *.safetensors, sorted by name (bytes)
  std::vector<SafetensorsFile> shards;     // same order
  std::optional<std::string> config_text;  // config.json bytes, if present
  std::optional<std::string> index_text;   // the index's bytes, if present
  std::string index_name = kIndexFile;     // kIndexFile, or kDiffusersIndexFile when that is it
  std::vector<std::string> side_files;     // other files, relative paths, sorted
  std::unordered_map<std::string, TensorLocation> tensors;  // every tensor, by name

  std::string shard_path(size_t shard) const { return (dir / shard_names[shard]).string(); }
  const TensorInfo& tensor(const TensorLocation& at) const {
    return shards[at.shard].header().tensors[at.tensor];
  }
  // Every tensor in original file order: by shard name, then data offset.
  std::vector<TensorLocation> tensors_in_file_order() const;
};

// A top-level file name that can be a shard: "<something>.safetensors".
bool is_shard_name(const std::string& name);

// The checkpoint's shards among a folder's top-level file names, sorted: with an index (its
// text given), the files its weight_map names, each of which must be among them (kNotFound
// otherwise; kBadConfig for an index that is not usable JSON; `index_where` names it in
// messages); without, every *.safetensors. Shared by open_model_folder and remote inspect.
Result<std::vector<std::string>> checkpoint_shards(const std::vector<std::string>& top_level_files,
                                                   const std::optional<std::string>& index_text,
                                                   const std::string& index_where);

// Lists and opens a folder. kNotFound if `dir` is not a folder, holds no *.safetensors, or
// its index names a shard that is not there; kBadConfig if the index is not usable JSON;
// kDuplicateName if a tensor name appears in two shards; parse errors of any shard as the
// format reports them (naming the file).
// Stops with kInterrupted once `cancel` is cancelled.
Result<ModelFolder> open_model_folder(const std::filesystem::path& dir,
                                      const CancelToken& cancel = CancelToken::never());

// A single .safetensors file as a checkpoint of one shard: `dir` is its folder, no config.json,
// no index, no side file (BFL/ComfyUI distribute checkpoints so). A file that does not parse
// and whose name does not end in ".safetensors" is kInvalidArgument "not a safetensors file";
// other parse errors as the format reports them.
Result<ModelFolder> open_single_file_model(const std::filesystem::path& file);

// open_model_folder for a folder, open_single_file_model for anything else.
Result<ModelFolder> open_model_path(const std::filesystem::path& path,
                                    const CancelToken& cancel = CancelToken::never());

// Copies side files (relative paths under `from`) to the same paths under `to`, creating
// folders; checks for interruption between pieces. `on_bytes` (may be empty) is told how many
// bytes were copied, for progress.
Status copy_side_files(const std::filesystem::path& from, const std::filesystem::path& to,
                       const std::vector<std::string>& files,
                       const std::function<void(uint64_t)>& on_bytes, const CancelToken& cancel);

// Copies one regular file's contents (symlinks followed) to a new file `to` (which must not
// exist), keeping its permission bits; stops with kInterrupted once `cancel` is cancelled.
Status copy_one_file(const std::filesystem::path& from, const std::filesystem::path& to,
                     const std::function<void(uint64_t)>& on_bytes, const CancelToken& cancel);

}  // namespace df11::app
