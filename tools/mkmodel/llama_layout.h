// The tensors and side files of a Llama-shaped (LlamaForCausalLM) BF16 checkpoint.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "df11/dtype.h"
#include "df11/status.h"
#include "mkmodel/weight_generator.h"

namespace df11::mkmodel {

struct LlamaDims {
  uint64_t layers = 0;
  uint64_t hidden = 0;
  uint64_t intermediate = 0;
  uint64_t vocab = 0;
  uint64_t heads = 0;
  uint64_t kv_heads = 0;  // grouped-query attention: heads / 4 where that divides
  bool tied = false;      // tie_word_embeddings: no lm_head.weight tensor
  uint64_t head_dim() const { return hidden / heads; }
};

// Checks the dimensions describe a model this tool can write (kInvalidArgument otherwise).
Status validate_dims(const LlamaDims& dims);

enum class Fill {
  kRandom,   // GeneratorParams-driven BF16 values
  kInvFreq,  // rotary inverse frequencies 1 / theta^(2i / head_dim), F32
};

struct TensorSpec {
  std::string name;
  Dtype dtype = Dtype::kBF16;  // kBF16 or kF32
  std::vector<uint64_t> shape;
  Fill fill = Fill::kRandom;
  InitKind init = InitKind::kGaussian;
  float std = 0;  // for kGaussian: 1 / sqrt(fan_in)
  uint64_t n_elements() const;
  uint64_t n_bytes() const { return n_elements() * (dtype == Dtype::kF32 ? 4 : 2); }
};

// Tensors in PyTorch state_dict order (the order Hugging Face shards them in).
std::vector<TensorSpec> llama_tensors(const LlamaDims& dims);

// Sum of n_bytes() over llama_tensors(dims), computed without building the list.
uint64_t llama_total_bytes(const LlamaDims& dims);

inline constexpr double kRopeTheta = 10000.0;

// Side files, byte-exact as transformers writes them (sorted keys, 2-space indent, final
// newline).
std::string llama_config_json(const LlamaDims& dims);
std::string generation_config_json();
// A small tokenizer.json that parses with `tokenizers` (byte-level BPE, a few tokens).
std::string tokenizer_json();

}  // namespace df11::mkmodel
