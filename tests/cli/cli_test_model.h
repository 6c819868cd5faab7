// Small Hugging Face style BF16 checkpoint folders written inside a test (no network, no
// generator binary): Llama-shaped, sharded with an index, a block split across the shards,
// norms, an F32 tensor, a tokenizer side file. Plus file helpers for the CLI tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "df11/dtype.h"

namespace df11::clitest {

struct TinyLlama {
  int layers = 3;
  uint64_t hidden = 64;
  uint64_t intermediate = 128;
  uint64_t vocab = 256;
  bool tied_embeddings = false;  // no lm_head.weight; config says tie_word_embeddings
  bool sharded = true;           // two shards + model.safetensors.index.json, layer 1 split
  uint64_t seed = 1;
  // Tensor that gets +Inf at element 5 ("" for none): its group must be stored raw.
  std::string inf_tensor;
};

// Writes the folder (created; must not exist). Returns the tensor names in file order.
std::vector<std::string> write_tiny_llama(const std::filesystem::path& dir, const TinyLlama& m);

// A synthetic checkpoint of any architecture: tensors by name and shape, in file order.
struct SyntheticTensor {
  std::string name;
  std::vector<uint64_t> shape;
  Dtype dtype = Dtype::kBF16;
};
struct SyntheticCheckpoint {
  std::string config_json = "{}";  // written as config.json
  std::vector<SyntheticTensor> tensors;
  size_t shards = 1;  // > 1: tensors split evenly over "<stem>-0000i-of-0000n" + index
  // When not empty: tensors per shard, in file order (overrides `shards`; must add up to the
  // number of tensors), so that a test decides where blocks and shards overlap.
  std::vector<size_t> shard_tensors;
  std::string stem = "model";  // "diffusion_pytorch_model" for a diffusers component
  std::string nan_tensor;      // this BF16 tensor gets a NaN at element 3
  uint64_t seed = 7;
};
// Writes the folder (created). Weights are Gaussian (BF16, F16, F32 alike); 1-D tensors
// near 1 (norm scales).
void write_checkpoint(const std::filesystem::path& dir, const SyntheticCheckpoint& c);

// A fresh directory under TMPDIR, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// sha256 of every regular file under `dir`, by relative path.
std::map<std::string, std::string> tree_sha256(const std::filesystem::path& dir);

// Names of the entries directly in `dir` (sorted).
std::vector<std::string> list_dir(const std::filesystem::path& dir);

std::string read_text(const std::filesystem::path& file);
void write_text(const std::filesystem::path& file, const std::string& text);

// XORs byte `offset` of `file` with `mask`.
void flip_byte(const std::filesystem::path& file, uint64_t offset, uint8_t mask = 0x01);

// Absolute file offset of tensor `name` in a safetensors file (first data byte).
uint64_t tensor_file_offset(const std::filesystem::path& file, const std::string& name);

// Offset of the first occurrence of `needle` in the file's bytes (asserts it exists).
uint64_t find_in_file(const std::filesystem::path& file, const std::string& needle);

}  // namespace df11::clitest
