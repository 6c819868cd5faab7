#include "mkmodel/checkpoint_writer.h"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <system_error>

#include "df11/file_io.h"
#include "df11/safetensors.h"

namespace df11::mkmodel {
namespace {

namespace fs = std::filesystem;

// safetensors stores little-endian values; this tool writes host uint16/float arrays as is.
static_assert(std::endian::native == std::endian::little,
              "df11-mkmodel needs a little-endian host");

// RNG chunks per parallel task: 8 x 64Ki weights = 1 MiB of BF16 per pwrite.
constexpr uint64_t kTaskChunks = 8;

Status io_error(const fs::path& path, const std::string& what, int err) {
  return Status(ErrorCode::kIo, path.string() + ": " + what + ": " + std::strerror(err));
}

std::string shard_name(size_t index, size_t count) {
  if (count == 1) return "model.safetensors";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "model-%05zu-of-%05zu.safetensors", index + 1, count);
  return buf;
}

// Hugging Face's split_torch_state_dict_into_shards: walk the state dict in order and start a
// new shard when the next tensor would push the current one past the limit. Tensors are never
// split, so one transformer block may straddle two shards.
std::vector<std::vector<const TensorSpec*>> assign_shards(const std::vector<TensorSpec>& tensors,
                                                          uint64_t shard_bytes) {
  std::vector<std::vector<const TensorSpec*>> shards(1);
  uint64_t current = 0;
  for (const TensorSpec& t : tensors) {
    if (!shards.back().empty() && current + t.n_bytes() > shard_bytes) {
      shards.emplace_back();
      current = 0;
    }
    shards.back().push_back(&t);
    current += t.n_bytes();
  }
  return shards;
}

// The safetensors library's own file order: dtype descending (F32 before BF16), then name.
void sort_like_safetensors(std::vector<const TensorSpec*>& tensors) {
  std::sort(tensors.begin(), tensors.end(), [](const TensorSpec* a, const TensorSpec* b) {
    if (a->dtype != b->dtype) return a->dtype == Dtype::kF32;
    return a->name < b->name;
  });
}

Status write_random_bf16(const OutputFile& file, const TensorSpec& t, uint64_t seed,
                         uint64_t offset) {
  const GeneratorParams params{seed, tensor_key(t.name), t.init, t.std};
  const uint64_t n = t.n_elements();
  const uint64_t task_weights = kTaskChunks * kChunkWeights;
  const uint64_t n_tasks = (n + task_weights - 1) / task_weights;
  tbb::enumerable_thread_specific<std::vector<uint16_t>> buffers;
  std::mutex error_mutex;
  Status first_error;
  tbb::parallel_for(
      tbb::blocked_range<uint64_t>(0, n_tasks, 1), [&](const tbb::blocked_range<uint64_t>& r) {
        std::vector<uint16_t>& buf = buffers.local();
        buf.resize(task_weights);
        for (uint64_t task = r.begin(); task < r.end(); ++task) {
          const uint64_t first = task * task_weights;
          const uint64_t count = std::min(task_weights, n - first);
          std::span<uint16_t> out(buf.data(), count);
          generate_bf16(params, task * kTaskChunks, out);
          Status s = file.pwrite_all(offset + 2 * first,
                                     {reinterpret_cast<const uint8_t*>(out.data()), 2 * count});
          if (!s) {
            std::lock_guard<std::mutex> lock(error_mutex);
            if (first_error.is_ok()) first_error = s;
            return;
          }
        }
      });
  return first_error;
}

Status write_inv_freq(const OutputFile& file, const TensorSpec& t, uint64_t offset) {
  const uint64_t half = t.n_elements();
  std::vector<float> v(half);
  for (uint64_t i = 0; i < half; ++i) {
    v[i] = static_cast<float>(
        1.0 / std::pow(kRopeTheta, static_cast<double>(2 * i) / static_cast<double>(2 * half)));
  }
  return file.pwrite_all(offset, {reinterpret_cast<const uint8_t*>(v.data()), 4 * half});
}

Status write_shard(const fs::path& path, std::vector<const TensorSpec*> tensors, uint64_t seed,
                   WrittenShard& written) {
  sort_like_safetensors(tensors);
  SafetensorsLayout layout;
  DF11_RETURN_IF_ERROR(layout.set_metadata({{"format", "pt"}}));
  for (const TensorSpec* t : tensors) {
    DF11_RETURN_IF_ERROR(layout.add_tensor(t->name, t->dtype, t->shape, t->n_bytes()));
  }
  DF11_ASSIGN_OR_RETURN(const FinalizedLayout finalized, layout.finalize());
  DF11_ASSIGN_OR_RETURN(OutputFile file, OutputFile::create(path.string()));
  DF11_RETURN_IF_ERROR(file.preallocate(finalized.file_size));
  DF11_RETURN_IF_ERROR(file.pwrite_all(0, finalized.prefix));
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorSpec& t = *tensors[i];
    const uint64_t offset = finalized.tensor_offsets[i];
    if (t.fill == Fill::kInvFreq) {
      DF11_RETURN_IF_ERROR(write_inv_freq(file, t, offset));
    } else {
      DF11_RETURN_IF_ERROR(write_random_bf16(file, t, seed, offset));
    }
    written.tensor_bytes += t.n_bytes();
  }
  written.file_bytes = finalized.file_size;
  written.n_tensors = tensors.size();
  return file.commit();
}

bool is_our_output(const std::string& name) {
  if (name == "model.safetensors" || name == "model.safetensors.index.json" ||
      name == "config.json" || name == "generation_config.json" || name == "tokenizer.json") {
    return true;
  }
  return name.starts_with("model-") && name.find("-of-") != std::string::npos &&
         name.ends_with(".safetensors");
}

Status prepare_out_dir(const fs::path& dir, bool force) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) {
      return Status(ErrorCode::kExists, dir.string() + ": exists and is not a directory");
    }
    std::vector<fs::path> ours;
    bool non_empty = false;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      non_empty = true;
      if (is_our_output(entry.path().filename().string())) ours.push_back(entry.path());
    }
    if (ec) return io_error(dir, "cannot list", ec.value());
    if (non_empty && !force) {
      return Status(ErrorCode::kExists,
                    dir.string() + ": directory is not empty (use --force to overwrite)");
    }
    // Stale shards of an earlier run would be read as part of the model: remove them.
    for (const fs::path& p : ours) {
      if (!fs::remove(p, ec) && ec) return io_error(p, "cannot remove", ec.value());
    }
    return Status::ok();
  }
  fs::create_directories(dir, ec);
  if (ec) return io_error(dir, "cannot create directory", ec.value());
  return Status::ok();
}

}  // namespace

Result<WriteSummary> write_checkpoint(const LlamaDims& dims, const WriteOptions& options) {
  DF11_RETURN_IF_ERROR(validate_dims(dims));
  if (options.shard_bytes == 0) {
    return Status(ErrorCode::kInvalidArgument, "shard size must be at least 1 byte");
  }
  DF11_RETURN_IF_ERROR(prepare_out_dir(options.out_dir, options.force));
  const std::vector<TensorSpec> tensors = llama_tensors(dims);
  const auto shards = assign_shards(tensors, options.shard_bytes);

  WriteSummary summary;
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    WrittenShard written;
    written.file = shard_name(i, shards.size());
    DF11_RETURN_IF_ERROR(
        write_shard(options.out_dir / written.file, shards[i], options.seed, written));
    for (const TensorSpec* t : shards[i]) weight_map[t->name] = written.file;
    summary.total_tensor_bytes += written.tensor_bytes;
    summary.n_tensors += written.n_tensors;
    summary.shards.push_back(written);
  }
  if (shards.size() > 1) {
    nlohmann::json index;
    index["metadata"] = {{"total_size", summary.total_tensor_bytes}};
    index["weight_map"] = weight_map;
    DF11_RETURN_IF_ERROR(write_file_atomic(
        (options.out_dir / "model.safetensors.index.json").string(), index.dump(2) + "\n"));
  }
  const fs::path& dir = options.out_dir;
  DF11_RETURN_IF_ERROR(write_file_atomic((dir / "config.json").string(), llama_config_json(dims)));
  DF11_RETURN_IF_ERROR(
      write_file_atomic((dir / "generation_config.json").string(), generation_config_json()));
  DF11_RETURN_IF_ERROR(write_file_atomic((dir / "tokenizer.json").string(), tokenizer_json()));
  return summary;
}

}  // namespace df11::mkmodel
