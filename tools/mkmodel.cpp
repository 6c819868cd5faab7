// df11-mkmodel: writes a synthetic Llama-shaped BF16 Hugging Face checkpoint folder, for
// demos, tests and benchmarks when no real model is at hand (or none may be downloaded).
//
//   df11-mkmodel OUT_DIR [--size 200MB | --layers N] [--hidden H] [--intermediate I]
//                [--vocab V] [--heads N] [--kv-heads N] [--shard-size 500MB] [--seed S]
//                [--tied] [--threads N] [--force]
//
// Exit codes (as the df11 tool): 0 ok, 2 usage (bad option, OUT_DIR not empty without
// --force), 3 I/O error, 1 anything else.
#include <tbb/global_control.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "mkmodel/byte_size.h"
#include "mkmodel/checkpoint_writer.h"
#include "mkmodel/llama_layout.h"

namespace {

using df11::ErrorCode;
using df11::Result;
using df11::Status;
using df11::mkmodel::LlamaDims;

constexpr const char* kDefaultSize = "200MB";  // the README quickstart model
constexpr uint64_t kDefaultVocab = 32000;
// With --size alone the width comes from this ladder (TinyLlama-1.1B is the widest rung): the
// widest whose 4-layer model fits the size, so that small sizes still get several layers.
struct Preset {
  uint64_t hidden, intermediate, heads;
};
constexpr Preset kPresets[] = {{512, 1408, 4}, {1024, 2816, 8}, {2048, 5632, 16}};
constexpr uint64_t kPresetMinLayers = 4;

struct Args {
  std::string out_dir;
  std::string size;
  std::optional<uint64_t> layers, hidden, intermediate, vocab, heads, kv_heads;
  std::string shard_size = "500MB";
  uint64_t seed = 0;
  bool tied = false;
  bool force = false;
  int threads = 0;
};

int exit_code(const Status& s) {
  switch (s.code()) {
    case ErrorCode::kIo:
      return 3;
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kExists:
      return 2;  // as the df11 tool: output exists without --force
    default:
      return 1;
  }
}

LlamaDims with_layers(LlamaDims d, uint64_t layers) {
  d.layers = layers;
  return d;
}

// Fills in every dimension the user left out (see the --help text).
Result<LlamaDims> choose_dims(const Args& a) {
  if (a.layers && !a.size.empty()) {
    return Status(ErrorCode::kInvalidArgument, "--size and --layers are mutually exclusive");
  }
  uint64_t target = 0;
  if (!a.layers) {
    DF11_ASSIGN_OR_RETURN(target,
                          df11::mkmodel::parse_byte_size(a.size.empty() ? kDefaultSize : a.size));
  }
  LlamaDims d;
  d.tied = a.tied;
  d.vocab = a.vocab.value_or(kDefaultVocab);
  Preset p = kPresets[std::size(kPresets) - 1];
  if (!a.hidden && !a.layers) {
    p = kPresets[0];
    for (const Preset& candidate : kPresets) {
      LlamaDims c = d;
      c.hidden = candidate.hidden;
      c.intermediate = a.intermediate.value_or(candidate.intermediate);
      c.heads = a.heads.value_or(candidate.heads);
      c.kv_heads = 1;
      if (df11::mkmodel::llama_total_bytes(with_layers(c, kPresetMinLayers)) <= target) {
        p = candidate;
      }
    }
  }
  if (a.hidden) {
    d.hidden = *a.hidden;
    // Llama's SwiGLU width: about 8/3 * hidden, here 11/4 as in TinyLlama, rounded up to 64.
    d.intermediate = a.intermediate.value_or((11 * d.hidden / 4 + 63) / 64 * 64);
    const uint64_t default_heads =
        d.hidden % 128 == 0 ? d.hidden / 128 : (d.hidden % 64 == 0 ? d.hidden / 64 : 1);
    d.heads = a.heads.value_or(default_heads);
  } else {
    d.hidden = p.hidden;
    d.intermediate = a.intermediate.value_or(p.intermediate);
    d.heads = a.heads.value_or(p.heads);
  }
  d.kv_heads = a.kv_heads.value_or(d.heads % 4 == 0 ? d.heads / 4 : d.heads);
  if (a.layers) {
    d.layers = *a.layers;
  } else {
    if (d.heads == 0 || d.hidden % d.heads != 0) d.heads = 1;  // validated below with layers
    const uint64_t fixed = df11::mkmodel::llama_total_bytes(with_layers(d, 0));
    const uint64_t per_layer = df11::mkmodel::llama_total_bytes(with_layers(d, 1)) - fixed;
    const double layers =
        target > fixed ? std::round(static_cast<double>(target - fixed) / per_layer) : 1.0;
    d.layers = std::max<uint64_t>(1, static_cast<uint64_t>(layers));
    if (a.heads) d.heads = *a.heads;
  }
  DF11_RETURN_IF_ERROR(df11::mkmodel::validate_dims(d));
  if (!a.layers) {
    // One layer may already be far more than asked for (the vocabulary alone is 32000 rows):
    // say so rather than write a model of another size.
    const uint64_t total = df11::mkmodel::llama_total_bytes(d);
    if (total > target + target / 2) {
      char sizes[160];
      std::snprintf(sizes, sizeof sizes,
                    "the smallest model with these dimensions (1 layer, hidden %llu, vocab %llu) "
                    "is %.1f MB",
                    static_cast<unsigned long long>(d.hidden),
                    static_cast<unsigned long long>(d.vocab), static_cast<double>(total) / 1e6);
      return Status(ErrorCode::kInvalidArgument,
                    "--size " + a.size + ": " + sizes +
                        "; ask for at least that, or set smaller dimensions (e.g. --layers 1 "
                        "--hidden 64 --vocab 1000)");
    }
  }
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{
      "Writes a synthetic Llama-shaped BF16 Hugging Face checkpoint (config.json, "
      "generation_config.json, tokenizer.json, sharded safetensors + index). Weights are "
      "Gaussian with std 1/sqrt(fan_in) and about 1 in 100k outliers x20..x100; RMSNorm "
      "scales are 1 + N(0, 0.05); model.rotary_emb.inv_freq is F32. Same seed and options "
      "give the same bytes on any machine and thread count.",
      "df11-mkmodel"};
  app.add_option("OUT_DIR", a.out_dir, "output folder (created; must be empty unless --force)")
      ->required();
  app.add_option("--size", a.size,
                 "approximate total size, e.g. 200MB, 2.5GB, 1GiB (default 200MB); picks the "
                 "layer count and, without --hidden, the width: hidden 512/1024/2048 "
                 "(intermediate 1408/2816/5632, heads 4/8/16), the widest with >= 4 layers");
  app.add_option("--layers", a.layers, "number of transformer layers (instead of --size)");
  app.add_option("--hidden", a.hidden, "hidden size");
  app.add_option("--intermediate", a.intermediate,
                 "MLP intermediate size (default 11/4 x hidden, rounded up to 64)");
  app.add_option("--vocab", a.vocab, "vocabulary size (default 32000)");
  app.add_option("--heads", a.heads, "attention heads (default hidden/128)");
  app.add_option("--kv-heads", a.kv_heads, "key/value heads (default heads/4, GQA)");
  app.add_option("--shard-size", a.shard_size,
                 "max tensor bytes per safetensors shard (default 500MB); tensors are never "
                 "split, one file if everything fits (model.safetensors, no index)");
  app.add_option("--seed", a.seed, "random seed (default 0)");
  app.add_flag("--tied", a.tied, "tie_word_embeddings: no lm_head.weight");
  app.add_option("--threads", a.threads, "worker threads (default: all cores)");
  app.add_flag("--force", a.force, "write into a non-empty OUT_DIR (replaces model files)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  try {
    Result<LlamaDims> dims = choose_dims(a);
    if (!dims) {
      std::cerr << "df11-mkmodel: " << dims.status().to_string() << "\n";
      return exit_code(dims.status());
    }
    Result<uint64_t> shard = df11::mkmodel::parse_byte_size(a.shard_size);
    if (!shard) {
      std::cerr << "df11-mkmodel: --shard-size: " << shard.status().to_string() << "\n";
      return 2;
    }
    std::unique_ptr<tbb::global_control> threads;
    if (a.threads > 0) {
      threads = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                      static_cast<size_t>(a.threads));
    }
    df11::mkmodel::WriteOptions options;
    options.out_dir = a.out_dir;
    options.shard_bytes = *shard;
    options.seed = a.seed;
    options.force = a.force;
    const auto start = std::chrono::steady_clock::now();
    Result<df11::mkmodel::WriteSummary> written = df11::mkmodel::write_checkpoint(*dims, options);
    if (!written) {
      std::cerr << "df11-mkmodel: " << written.status().to_string() << "\n";
      return exit_code(written.status());
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const LlamaDims& d = *dims;
    std::printf(
        "%s: Llama layers=%llu hidden=%llu intermediate=%llu vocab=%llu heads=%llu "
        "kv_heads=%llu%s\n",
        a.out_dir.c_str(), static_cast<unsigned long long>(d.layers),
        static_cast<unsigned long long>(d.hidden), static_cast<unsigned long long>(d.intermediate),
        static_cast<unsigned long long>(d.vocab), static_cast<unsigned long long>(d.heads),
        static_cast<unsigned long long>(d.kv_heads), d.tied ? " tied" : "");
    for (const auto& s : written->shards) {
      std::printf("  %s  %llu %s  %s\n", s.file.c_str(),
                  static_cast<unsigned long long>(s.n_tensors),
                  s.n_tensors == 1 ? "tensor" : "tensors",
                  df11::mkmodel::format_byte_size(s.file_bytes).c_str());
    }
    std::printf("%llu tensors, %s of tensor data in %.2f s (%.0f MB/s), seed %llu\n",
                static_cast<unsigned long long>(written->n_tensors),
                df11::mkmodel::format_byte_size(written->total_tensor_bytes).c_str(), seconds,
                static_cast<double>(written->total_tensor_bytes) / 1e6 / seconds,
                static_cast<unsigned long long>(a.seed));
    return 0;
  } catch (const std::bad_alloc&) {
    std::cerr << "df11-mkmodel: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "df11-mkmodel: internal error: " << e.what() << "\n";
    return 1;
  }
}
