#include "memory_source.h"

#include <algorithm>
#include <new>
#include <set>
#include <string_view>
#include <system_error>
#include <unordered_map>

#include "df11/file_io.h"
#include "df11/hash.h"
#include "df11/metadata.h"
#include "df11/sha256.h"
#include "df11/utf8.h"

namespace df11::app {
namespace fs = std::filesystem;

namespace {

constexpr const char* kWhere = "checkpoint in memory";

std::string in_memory(const std::string& what) { return std::string(kWhere) + ": " + what; }

// The shard's header as its file would hold it, parsed back as a folder's reader parses it.
Result<std::pair<std::vector<uint8_t>, SafetensorsHeader>> lay_out(const CheckpointShard& shard) {
  SafetensorsLayout layout;
  uint64_t data_bytes = 0;
  for (const CheckpointTensor& t : shard.tensors) {
    DF11_RETURN_IF_ERROR(layout.add_tensor(t.name, t.dtype, t.shape, t.byte_size));
    data_bytes += t.byte_size;
  }
  if (shard.metadata) DF11_RETURN_IF_ERROR(layout.set_metadata(*shard.metadata));
  DF11_ASSIGN_OR_RETURN(FinalizedLayout finalized, layout.finalize());
  DF11_ASSIGN_OR_RETURN(
      SafetensorsHeader header,
      parse_safetensors_header(finalized.prefix, finalized.data_start + data_bytes, shard.name));
  return std::pair{std::move(finalized.prefix), std::move(header)};
}

}  // namespace

Result<std::unique_ptr<MemorySource>> MemorySource::create(const CheckpointInMemory& checkpoint) {
  std::unique_ptr<MemorySource> source(new MemorySource());
  if (checkpoint.shards.empty()) {
    return Status(ErrorCode::kInvalidArgument, in_memory("no tensors"));
  }
  // Tensors: each valid, names unique across the checkpoint (as open_model_folder requires).
  std::unordered_map<std::string, const std::string*> shard_of;
  std::set<std::string> shard_names;
  for (const CheckpointShard& shard : checkpoint.shards) {
    if (!is_safe_file_name(shard.name) || !is_shard_name(shard.name)) {
      return Status(ErrorCode::kInvalidArgument,
                    in_memory("shard '" + shard.name +
                              "': not a shard file name ('<name>.safetensors', no '/')"));
    }
    if (!shard_names.insert(shard.name).second) {
      return Status(ErrorCode::kDuplicateName, in_memory("shard '" + shard.name + "' given twice"));
    }
    if (shard.tensors.empty()) {
      return Status(ErrorCode::kInvalidArgument,
                    in_memory("shard '" + shard.name + "' has no tensors"));
    }
    for (const CheckpointTensor& t : shard.tensors) {
      Status valid = check_checkpoint_tensor(t);
      if (!valid) return valid.with_context(in_memory(shard.name));
      const auto [at, inserted] = shard_of.emplace(t.name, &shard.name);
      if (!inserted) {
        return Status(ErrorCode::kDuplicateName,
                      in_memory(shard.name + ": tensor '" + t.name + "' also appears in " +
                                *at->second + " (tensor names must be unique across the model)"));
      }
    }
  }

  // Files: safe relative paths, each once; shards come as tensors, not as files.
  std::vector<std::string> top_level(shard_names.begin(), shard_names.end());
  std::set<std::string> file_names;
  for (const auto& [name, text] : checkpoint.files) {
    if (!is_safe_relative_path(name) || !is_valid_utf8(name)) {
      return Status(ErrorCode::kInvalidArgument,
                    in_memory("file '" + name + "': not a safe relative path"));
    }
    if (!file_names.insert(name).second || shard_names.count(name) != 0) {
      return Status(ErrorCode::kDuplicateName, in_memory("file '" + name + "' given twice"));
    }
    const bool top = name.find('/') == std::string::npos;
    if (top && is_shard_name(name)) {
      return Status(ErrorCode::kInvalidArgument,
                    in_memory("file '" + name +
                              "': a .safetensors file is a shard: give its tensors instead"));
    }
    if (top) top_level.push_back(name);
    source->contents_[name] = &text;
  }
  // The index: Hugging Face's name, else diffusers' (as open_model_folder picks it).
  source->index_name_ = kIndexFile;
  for (const char* name : {kIndexFile, kDiffusersIndexFile}) {
    if (file_names.count(name) != 0) {
      source->index_name_ = name;
      break;
    }
  }
  for (const auto& [name, text] : source->contents_) {
    const bool config = name == kConfigFile;
    if (!config && name != source->index_name_) {
      source->side_files_.push_back(name);  // the map is sorted: so is the list
      continue;
    }
    const uint64_t limit = config ? kMaxConfigBytes : kMaxIndexBytes;
    if (text->size() > limit) {
      return Status(ErrorCode::kResourceLimit,
                    in_memory(name + ": " + std::to_string(text->size()) +
                              " bytes, more than the limit of " + std::to_string(limit)));
    }
    (config ? source->config_text_ : source->index_text_) = *text;
  }
  if (!source->config_text_) {
    return Status(ErrorCode::kNotFound,
                  in_memory(std::string(kConfigFile) + ": not given (a Hugging Face checkpoint "
                                                       "has one: the model's config)"));
  }
  // With an index, it must name exactly the shards given (on disk, a shard it does not name
  // would be a file to copy, not part of the checkpoint).
  DF11_ASSIGN_OR_RETURN(
      std::vector<std::string> indexed,
      checkpoint_shards(top_level, source->index_text_, in_memory(source->index_name_)));
  for (const std::string& name : shard_names) {
    if (!std::binary_search(indexed.begin(), indexed.end(), name)) {
      return Status(ErrorCode::kBadConfig,
                    in_memory(source->index_name_ + ": its weight_map names no tensor of shard '" +
                              name + "'"));
    }
  }

  // Shards in name order, as a folder lists them.
  std::vector<const CheckpointShard*> sorted;
  for (const CheckpointShard& shard : checkpoint.shards) sorted.push_back(&shard);
  std::sort(sorted.begin(), sorted.end(),
            [](const CheckpointShard* a, const CheckpointShard* b) { return a->name < b->name; });
  for (const CheckpointShard* shard : sorted) {
    auto laid = lay_out(*shard);
    if (!laid) return laid.status().with_context(kWhere);
    Shard out;
    out.name = shard->name;
    out.prefix = std::move(laid->first);
    out.header = std::move(laid->second);
    std::unordered_map<std::string_view, const CheckpointTensor*> by_name;
    for (const CheckpointTensor& t : shard->tensors) by_name.emplace(t.name, &t);
    // The header holds exactly the shard's tensors.
    for (const TensorInfo& t : out.header.tensors) out.tensors.push_back(by_name.at(t.name));
    source->shards_.push_back(std::move(out));
  }
  return source;
}

std::string MemorySource::where() const { return kWhere; }

std::string MemorySource::what(const TensorLocation& at) const {
  return shards_[at.shard].name + ": tensor '" + described(at).name + "'";
}

Status MemorySource::read(const TensorLocation& at, uint64_t offset, std::span<uint8_t> dst) const {
  const CheckpointTensor& t = described(at);
  for (uint64_t done = 0; done < dst.size();) {
    const uint64_t step = std::min<uint64_t>(kStreamStepBytes, dst.size() - done);
    Status status;
    {
      std::lock_guard<std::mutex> lock(read_mutex_);
      status = t.read(offset + done, dst.subspan(done, step));
    }
    if (!status) return status.with_context(in_memory(what(at)));
    done += step;
  }
  return Status::ok();
}

Result<std::span<const uint8_t>> MemorySource::tensor_bytes(const TensorLocation& at) const {
  const CheckpointTensor& t = described(at);
  if (t.data != nullptr || t.byte_size == 0) return std::span<const uint8_t>(t.data, t.byte_size);
  std::lock_guard<std::mutex> lock(staged_mutex_);
  Staged& staged = staged_[{at.shard, at.tensor}];
  if (!staged.bytes) {
    std::unique_ptr<uint8_t[]> bytes(new (std::nothrow) uint8_t[t.byte_size]);
    if (!bytes) {
      staged_.erase({at.shard, at.tensor});
      return Status(ErrorCode::kResourceLimit,
                    in_memory(what(at) + ": cannot stage " + std::to_string(t.byte_size) +
                              " bytes from its reader"));
    }
    Status status = read(at, 0, {bytes.get(), static_cast<size_t>(t.byte_size)});
    if (!status) {
      staged_.erase({at.shard, at.tensor});
      return status;
    }
    staged.bytes = std::move(bytes);
  }
  ++staged.holds;
  return std::span<const uint8_t>(staged.bytes.get(), t.byte_size);
}

void MemorySource::release(const TensorLocation& at) const {
  std::lock_guard<std::mutex> lock(staged_mutex_);
  const auto it = staged_.find({at.shard, at.tensor});
  if (it != staged_.end() && --it->second.holds == 0) staged_.erase(it);
}

Status MemorySource::stream_tensor(const TensorLocation& at, const ByteSink& sink,
                                   const CancelToken& cancel, uint64_t step_bytes) const {
  const CheckpointTensor& t = described(at);
  std::vector<uint8_t> buffer;
  for (uint64_t done = 0; done < t.byte_size;) {
    DF11_RETURN_IF_ERROR(cancel.check());
    const uint64_t step = std::min<uint64_t>(std::clamp<uint64_t>(step_bytes, 1, kStreamStepBytes),
                                             t.byte_size - done);
    if (t.data != nullptr) {
      DF11_RETURN_IF_ERROR(sink({t.data + done, static_cast<size_t>(step)}));
    } else {
      buffer.resize(step);
      DF11_RETURN_IF_ERROR(read(at, done, buffer));
      DF11_RETURN_IF_ERROR(sink(buffer));
    }
    done += step;
  }
  return Status::ok();
}

uint64_t MemorySource::side_file_bytes() const {
  uint64_t total = 0;
  for (const std::string& name : side_files_) total += contents_.at(name)->size();
  return total;
}

Status MemorySource::write_side_files(const fs::path& dir,
                                      const std::function<void(uint64_t)>& on_bytes,
                                      const CancelToken& cancel) const {
  for (const std::string& name : side_files_) {
    DF11_RETURN_IF_ERROR(cancel.check());
    const fs::path path = dir / name;
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec) return Status(ErrorCode::kIo, path.parent_path().string() + ": " + ec.message());
    const std::string& text = *contents_.at(name);
    DF11_RETURN_IF_ERROR(write_file_atomic(path.string(), text));
    if (on_bytes) on_bytes(text.size());
  }
  return Status::ok();
}

Result<SourceDigests> MemorySource::shard_digests(size_t shard, const std::atomic<bool>* stop,
                                                  const CancelToken& cancel,
                                                  bool /*read_ahead*/) const {
  const Shard& s = shards_[shard];
  Sha256 sha;
  sha.update(s.prefix);
  SourceDigests digests;
  // The data buffer is the tensors back to back in header order (the layout leaves no gaps).
  for (size_t t = 0; t < s.header.tensors.size(); ++t) {
    Xxh3 xxh3;
    DF11_RETURN_IF_ERROR(stream_tensor(
        {shard, t},
        [&](std::span<const uint8_t> bytes) {
          if (stop != nullptr && stop->load(std::memory_order_relaxed)) {
            return Status(ErrorCode::kInterrupted, in_memory(s.name + ": hashing stopped"));
          }
          sha.update(bytes);
          xxh3.update(bytes);
          return Status::ok();
        },
        cancel, kStreamStepBytes));
    digests.xxh3.push_back(xxh3.hex_digest());
  }
  digests.sha256 = sha.hex_digest();
  return digests;
}

}  // namespace df11::app
