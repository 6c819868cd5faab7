// Writes a Hugging Face style BF16 checkpoint folder: sharded safetensors files, their index,
// config.json, generation_config.json and tokenizer.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "df11/status.h"
#include "mkmodel/llama_layout.h"

namespace df11::mkmodel {

struct WriteOptions {
  std::filesystem::path out_dir;
  uint64_t shard_bytes = 500'000'000;  // max tensor bytes per shard (HF max_shard_size)
  uint64_t seed = 0;
  bool force = false;  // allow a non-empty out_dir; our own file names get replaced
};

struct WrittenShard {
  std::string file;
  uint64_t file_bytes = 0;  // header included
  uint64_t tensor_bytes = 0;
  uint64_t n_tensors = 0;
};

struct WriteSummary {
  std::vector<WrittenShard> shards;
  uint64_t total_tensor_bytes = 0;  // the index's metadata.total_size
  uint64_t n_tensors = 0;
};

// Generates every tensor (in parallel on the caller's TBB arena) and writes it with pwrite,
// tensor by tensor, so memory stays bounded by a few MiB per thread whatever the model size.
// Errors: kExists (out_dir not empty, no force), kIo (with the file and errno text).
Result<WriteSummary> write_checkpoint(const LlamaDims& dims, const WriteOptions& options);

}  // namespace df11::mkmodel
