#include "cli_test_model.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "df11/safetensors.h"
#include "df11/sha256.h"

namespace df11::clitest {
namespace fs = std::filesystem;

namespace {

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}

struct Tensor {
  std::string name;
  Dtype dtype;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> bytes;
};

Tensor bf16_tensor(const std::string& name, std::vector<uint64_t> shape, float mean, float stddev,
                   std::mt19937_64& rng) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  std::normal_distribution<float> dist(mean, stddev);
  Tensor t{name, Dtype::kBF16, std::move(shape), std::vector<uint8_t>(2 * n)};
  for (uint64_t i = 0; i < n; ++i) {
    const uint16_t w = to_bf16(dist(rng));
    t.bytes[2 * i] = static_cast<uint8_t>(w);
    t.bytes[2 * i + 1] = static_cast<uint8_t>(w >> 8);
  }
  return t;
}

void write_shard(const fs::path& path, const std::vector<Tensor>& tensors) {
  std::vector<TensorData> data;
  for (const Tensor& t : tensors) data.push_back(TensorData{t.name, t.dtype, t.shape, t.bytes});
  const MetadataEntries metadata{{"format", "pt"}};
  const Status status = write_safetensors(path.string(), data, &metadata);
  ASSERT_TRUE(status.is_ok()) << status.to_string();
}

uint16_t to_f16(float f) {
  // Values here are small normals: round-to-nearest on the mantissa is enough.
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000;
  const int exp = static_cast<int>((u >> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return static_cast<uint16_t>(sign);
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exp) << 10) | (((u >> 13) & 0x3ff)));
}

}  // namespace

void write_checkpoint(const fs::path& dir, const SyntheticCheckpoint& c) {
  fs::create_directories(dir);
  std::mt19937_64 rng(c.seed);
  std::vector<Tensor> tensors;
  for (const SyntheticTensor& spec : c.tensors) {
    const bool norm = spec.shape.size() == 1;
    const float mean = norm ? 1.0f : 0.0f, stddev = norm ? 0.05f : 0.02f;
    Tensor t = bf16_tensor(spec.name, spec.shape, mean, stddev, rng);
    t.dtype = spec.dtype;
    if (spec.dtype != Dtype::kBF16) {
      uint64_t n = t.bytes.size() / 2;
      std::normal_distribution<float> dist(mean, stddev);
      const size_t width = spec.dtype == Dtype::kF32 ? 4 : 2;
      t.bytes.assign(width * n, 0);
      for (uint64_t i = 0; i < n; ++i) {
        const float f = dist(rng);
        if (width == 4) {
          std::memcpy(t.bytes.data() + 4 * i, &f, 4);
        } else {
          const uint16_t h = to_f16(f);
          t.bytes[2 * i] = static_cast<uint8_t>(h);
          t.bytes[2 * i + 1] = static_cast<uint8_t>(h >> 8);
        }
      }
    }
    if (spec.name == c.nan_tensor) {
      t.bytes[6] = 0xc0;  // element 3 = 0x7fc0, a quiet NaN
      t.bytes[7] = 0x7f;
    }
    tensors.push_back(std::move(t));
  }
  std::vector<size_t> counts = c.shard_tensors;
  if (counts.empty()) {
    const size_t shards = std::max<size_t>(1, c.shards);
    const size_t per_shard = (tensors.size() + shards - 1) / shards;
    for (size_t s = 0; s < shards; ++s) {
      counts.push_back(std::min(tensors.size(), (s + 1) * per_shard) -
                       std::min(tensors.size(), s * per_shard));
    }
  }
  size_t placed = 0;
  for (size_t k : counts) placed += k;
  ASSERT_EQ(placed, tensors.size()) << "shard_tensors must add up to the tensors";
  const size_t n = counts.size();
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  uint64_t total = 0;
  size_t first = 0;
  for (size_t s = 0; s < n; ++s) {
    char name[96];
    std::snprintf(name, sizeof name, "%s-%05zu-of-%05zu.safetensors", c.stem.c_str(), s + 1, n);
    const std::string file = n == 1 ? c.stem + ".safetensors" : name;
    std::vector<Tensor> part(tensors.begin() + first, tensors.begin() + first + counts[s]);
    first += counts[s];
    write_shard(dir / file, part);
    for (const Tensor& t : part) {
      weight_map[t.name] = file;
      total += t.bytes.size();
    }
  }
  if (n > 1) {
    nlohmann::ordered_json index;
    index["metadata"] = {{"total_size", total}};
    index["weight_map"] = weight_map;
    write_text(dir / (c.stem + ".safetensors.index.json"), index.dump(2) + "\n");
  }
  write_text(dir / "config.json", c.config_json);
}

std::vector<std::string> write_tiny_llama(const fs::path& dir, const TinyLlama& m) {
  fs::create_directories(dir);
  std::mt19937_64 rng(m.seed);
  const float w_std = 0.5f / std::sqrt(static_cast<float>(m.hidden));
  std::vector<Tensor> first, second;
  first.push_back(bf16_tensor("model.embed_tokens.weight", {m.vocab, m.hidden}, 0, 0.02f, rng));
  for (int l = 0; l < m.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    std::vector<Tensor> layer;
    layer.push_back(bf16_tensor(p + "input_layernorm.weight", {m.hidden}, 1.0f, 0.05f, rng));
    for (const char* proj : {"q_proj", "k_proj", "v_proj", "o_proj"}) {
      layer.push_back(
          bf16_tensor(p + "self_attn." + proj + ".weight", {m.hidden, m.hidden}, 0, w_std, rng));
    }
    layer.push_back(
        bf16_tensor(p + "mlp.gate_proj.weight", {m.intermediate, m.hidden}, 0, w_std, rng));
    layer.push_back(
        bf16_tensor(p + "mlp.up_proj.weight", {m.intermediate, m.hidden}, 0, w_std, rng));
    layer.push_back(
        bf16_tensor(p + "mlp.down_proj.weight", {m.hidden, m.intermediate}, 0, w_std, rng));
    layer.push_back(
        bf16_tensor(p + "post_attention_layernorm.weight", {m.hidden}, 1.0f, 0.05f, rng));
    // Layer 1 is split across the shards after v_proj (as HF sharding by size does).
    for (size_t k = 0; k < layer.size(); ++k) {
      const bool to_first = !m.sharded || l == 0 || (l == 1 && k < 4);
      (to_first ? first : second).push_back(std::move(layer[k]));
    }
  }
  auto& tail = m.sharded ? second : first;
  tail.push_back(bf16_tensor("model.norm.weight", {m.hidden}, 1.0f, 0.05f, rng));
  if (!m.tied_embeddings) {
    tail.push_back(bf16_tensor("lm_head.weight", {m.vocab, m.hidden}, 0, 0.02f, rng));
  }
  Tensor inv_freq{"model.rotary_emb.inv_freq", Dtype::kF32, {m.hidden / 4}, {}};
  for (uint64_t i = 0; i < m.hidden / 4; ++i) {
    const float f = std::pow(10000.0f, -static_cast<float>(i) / (m.hidden / 4));
    inv_freq.bytes.resize(inv_freq.bytes.size() + 4);
    std::memcpy(inv_freq.bytes.data() + 4 * i, &f, 4);
  }
  tail.push_back(std::move(inv_freq));
  if (!m.inf_tensor.empty()) {
    for (auto* list : {&first, &second}) {
      for (Tensor& t : *list) {
        if (t.name == m.inf_tensor) {
          t.bytes[10] = 0x80;  // element 5 = 0x7f80 = +Inf
          t.bytes[11] = 0x7f;
        }
      }
    }
  }

  std::vector<std::string> names;
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  uint64_t total = 0;
  const std::string name1 = m.sharded ? "model-00001-of-00002.safetensors" : "model.safetensors";
  const std::string name2 = "model-00002-of-00002.safetensors";
  for (const auto& [file, list] : {std::pair{name1, &first}, std::pair{name2, &second}}) {
    if (list->empty()) continue;
    write_shard(dir / file, *list);
    for (const Tensor& t : *list) {
      names.push_back(t.name);
      weight_map[t.name] = file;
      total += t.bytes.size();
    }
  }
  if (m.sharded) {
    nlohmann::ordered_json index;
    index["metadata"] = {{"total_size", total}};
    index["weight_map"] = weight_map;
    write_text(dir / "model.safetensors.index.json", index.dump(2) + "\n");
  }
  nlohmann::ordered_json config;
  config["architectures"] = {"LlamaForCausalLM"};
  config["hidden_size"] = m.hidden;
  config["intermediate_size"] = m.intermediate;
  config["model_type"] = "llama";
  config["num_hidden_layers"] = m.layers;
  config["rms_norm_eps"] = 1e-05;
  config["tie_word_embeddings"] = m.tied_embeddings;
  config["torch_dtype"] = "bfloat16";
  config["vocab_size"] = m.vocab;
  write_text(dir / "config.json", config.dump(2) + "\n");
  write_text(dir / "tokenizer.json", "{\"version\": \"1.0\", \"model\": {\"type\": \"BPE\"}}\n");
  write_text(dir / "generation_config.json", "{\"bos_token_id\": 1}\n");
  fs::create_directories(dir / "extra");
  write_text(dir / "extra" / "README.md", "# tiny llama\nnot a real model \xe2\x9c\x93\n");
  return names;
}

TempDir::TempDir() {
  const char* base = getenv("TMPDIR");
  std::string templ = std::string(base != nullptr ? base : "/tmp") + "/df11-cli-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::map<std::string, std::string> tree_sha256(const fs::path& dir) {
  std::map<std::string, std::string> result;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    auto digest = sha256_file(entry.path().string());
    EXPECT_TRUE(digest.is_ok()) << digest.status().to_string();
    if (digest.is_ok()) result[entry.path().lexically_relative(dir).generic_string()] = *digest;
  }
  return result;
}

std::vector<std::string> list_dir(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary);
  out << text;
}

void flip_byte(const fs::path& file, uint64_t offset, uint8_t mask) {
  std::fstream io(file, std::ios::binary | std::ios::in | std::ios::out);
  io.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  io.read(&c, 1);
  c = static_cast<char>(c ^ mask);
  io.seekp(static_cast<std::streamoff>(offset));
  io.write(&c, 1);
}

uint64_t tensor_file_offset(const fs::path& file, const std::string& name) {
  auto opened = SafetensorsFile::open(file.string());
  EXPECT_TRUE(opened.is_ok()) << opened.status().to_string();
  if (!opened.is_ok()) return 0;
  const TensorInfo* t = opened->header().find(name);
  EXPECT_NE(t, nullptr) << name;
  return t == nullptr ? 0 : t->file_offset;
}

uint64_t find_in_file(const fs::path& file, const std::string& needle) {
  const std::string text = read_text(file);
  const size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle << " not in " << file;
  return at == std::string::npos ? 0 : at;
}

}  // namespace df11::clitest
