// The tools C API's checkpoint handle (df11_tools.h): collects the caller's description into
// the pipeline's CheckpointInMemory and runs compress_checkpoint
// (pipeline/include/df11/compress.h), the same code as `df11 compress` from the planner on. No
// exception crosses into C.
#include <map>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "callback_reporter.h"
#include "df11/compress.h"
#include "df11/df11_tools.h"
#include "df11/metadata.h"
#include "df11/model_folder.h"
#include "error_state.h"

using df11::ErrorCode;
using df11::Status;

struct df11_checkpoint {
  df11::capi::ErrorState err;
  // Tensors in the order added, with the file each names ("" when none).
  std::vector<std::pair<std::string, df11::app::CheckpointTensor>> tensors;
  std::map<std::string, df11::MetadataEntries> metadata;  // by shard file
  std::vector<std::pair<std::string, std::string>> files;
  df11::app::CompressOptions options;
  uint64_t shard_bytes = 0;
  df11_progress_fn progress = nullptr;
  void* progress_user = nullptr;
  std::vector<std::string> warnings;
  std::optional<df11::app::CompressSummary> summary;
};

namespace df11::tools {
namespace {

Status add_tensor(df11_checkpoint& ck, const char* file, const char* name, const char* dtype,
                  size_t rank, const uint64_t* shape, const uint8_t* data, uint64_t bytes,
                  app::TensorReader read) {
  if (name == nullptr) return Status(ErrorCode::kInvalidArgument, "tensor name is NULL");
  if (dtype == nullptr) {
    return Status(ErrorCode::kInvalidArgument, std::string("tensor '") + name + "': dtype is NULL");
  }
  if (rank != 0 && shape == nullptr) {
    return Status(
        ErrorCode::kInvalidArgument,
        std::string("tensor '") + name + "': shape is NULL with rank " + std::to_string(rank));
  }
  const std::string shard = file != nullptr ? file : "";
  if (file != nullptr && (!is_safe_file_name(shard) || !app::is_shard_name(shard))) {
    return Status(ErrorCode::kInvalidArgument,
                  std::string("tensor '") + name + "': '" + shard +
                      "' is not a shard file name ('<name>.safetensors', no '/')");
  }
  app::CheckpointTensor t;
  t.name = name;
  const auto parsed = parse_dtype(dtype);
  if (!parsed) {
    return Status(
        ErrorCode::kBadDtype,
        "tensor '" + t.name + "': unknown dtype '" + dtype +
            "' (safetensors names: BF16, F16, F32, F64, I8, I16, I32, I64, U8, BOOL, ...)");
  }
  t.dtype = *parsed;
  t.shape.assign(shape, shape + rank);
  t.byte_size = bytes;
  t.data = data;
  t.read = std::move(read);
  DF11_RETURN_IF_ERROR(app::check_checkpoint_tensor(t));
  ck.tensors.emplace_back(shard, std::move(t));
  return Status::ok();
}

// The handle's description as the pipeline takes it: shards by file (in the order their
// first tensor was added), or made here when no tensor names one.
Status build(const df11_checkpoint& ck, app::CheckpointInMemory& out) {
  out.files = ck.files;
  size_t named = 0;
  for (const auto& [file, t] : ck.tensors) named += file.empty() ? 0 : 1;
  if (named != 0 && named != ck.tensors.size()) {
    return Status(ErrorCode::kInvalidArgument,
                  "checkpoint in memory: " + std::to_string(named) + " of " +
                      std::to_string(ck.tensors.size()) +
                      " tensors name a shard file: give every tensor a file, or none");
  }
  if (named == 0) {
    std::vector<app::CheckpointTensor> tensors;
    for (const auto& [file, t] : ck.tensors) tensors.push_back(t);
    Status sharded = app::shard_checkpoint(std::move(tensors), ck.shard_bytes, out);
    return sharded.is_ok() ? sharded : sharded.with_context("checkpoint in memory");
  }
  std::map<std::string, size_t> shard_at;
  for (const auto& [file, t] : ck.tensors) {
    auto [it, inserted] = shard_at.emplace(file, out.shards.size());
    if (inserted) {
      out.shards.emplace_back();
      out.shards.back().name = file;
      const auto meta = ck.metadata.find(file);
      if (meta != ck.metadata.end()) out.shards.back().metadata = meta->second;
    }
    out.shards[it->second].tensors.push_back(t);
  }
  return Status::ok();
}

}  // namespace
}  // namespace df11::tools

using df11::capi::guarded;

extern "C" {

unsigned df11_tools_version_number(void) { return DF11_TOOLS_VERSION_NUMBER; }

df11_status df11_checkpoint_create(df11_checkpoint** out) {
  if (out == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  *out = new (std::nothrow) df11_checkpoint();
  return *out == nullptr ? DF11_ERROR_RESOURCE_LIMIT : DF11_OK;
}

void df11_checkpoint_free(df11_checkpoint* ck) { delete ck; }

const char* df11_checkpoint_errmsg(const df11_checkpoint* ck) {
  return ck == nullptr ? "no checkpoint handle (NULL)" : ck->err.last_message();
}

df11_status df11_checkpoint_errcode(const df11_checkpoint* ck) {
  return ck == nullptr ? DF11_ERROR_INVALID_ARGUMENT : ck->err.last_code();
}

df11_status df11_checkpoint_add_tensor(df11_checkpoint* ck, const char* file, const char* name,
                                       const char* dtype, size_t rank, const uint64_t* shape,
                                       const void* data, uint64_t bytes) {
  if (ck == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  return guarded(ck->err, [&] {
    if (data == nullptr && bytes != 0) {
      return Status(ErrorCode::kInvalidArgument, std::string("tensor '") + (name ? name : "") +
                                                     "': data is NULL for " +
                                                     std::to_string(bytes) +
                                                     " bytes (df11_checkpoint_add_tensor_reader "
                                                     "takes a reader instead)");
    }
    return df11::tools::add_tensor(*ck, file, name, dtype, rank, shape,
                                   static_cast<const uint8_t*>(data), bytes, {});
  });
}

df11_status df11_checkpoint_add_tensor_reader(df11_checkpoint* ck, const char* file,
                                              const char* name, const char* dtype, size_t rank,
                                              const uint64_t* shape, uint64_t bytes,
                                              df11_read_fn read, void* user) {
  if (ck == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  return guarded(ck->err, [&] {
    if (read == nullptr) {
      return Status(ErrorCode::kInvalidArgument,
                    std::string("tensor '") + (name ? name : "") + "': the reader is NULL");
    }
    df11::app::TensorReader reader = [read, user](uint64_t offset, std::span<uint8_t> dst) {
      const int rc = read(user, offset, dst.data(), dst.size());
      if (rc == 0) return Status::ok();
      return Status(ErrorCode::kIo, "the read callback failed (returned " + std::to_string(rc) +
                                        ") at byte " + std::to_string(offset));
    };
    return df11::tools::add_tensor(*ck, file, name, dtype, rank, shape, nullptr, bytes,
                                   std::move(reader));
  });
}

df11_status df11_checkpoint_set_shard_metadata(df11_checkpoint* ck, const char* file,
                                               const char* key, const char* value) {
  if (ck == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  return guarded(ck->err, [&] {
    if (file == nullptr || key == nullptr || value == nullptr) {
      return Status(ErrorCode::kInvalidArgument, "shard metadata: file, key and value are needed");
    }
    bool known = false;
    for (const auto& [f, t] : ck->tensors) known = known || f == file;
    if (!known) {
      return Status(ErrorCode::kInvalidArgument,
                    std::string("shard metadata: no tensor added to '") + file + "' yet");
    }
    df11::MetadataEntries& entries = ck->metadata[file];
    for (auto& [k, v] : entries) {
      if (k == key) {
        v = value;
        return Status::ok();
      }
    }
    entries.emplace_back(key, value);
    return Status::ok();
  });
}

df11_status df11_checkpoint_add_file(df11_checkpoint* ck, const char* path, const void* data,
                                     size_t bytes) {
  if (ck == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  return guarded(ck->err, [&] {
    if (path == nullptr || (data == nullptr && bytes != 0)) {
      return Status(ErrorCode::kInvalidArgument, "file: path and data are needed");
    }
    const std::string name = path;
    if (!df11::is_safe_relative_path(name)) {
      return Status(ErrorCode::kInvalidArgument,
                    "file '" + name +
                        "': not a relative path inside the folder ('/'-separated, no '.' or "
                        "'..' components)");
    }
    if (name.find('/') == std::string::npos && df11::app::is_shard_name(name)) {
      return Status(ErrorCode::kInvalidArgument,
                    "file '" + name + "': a .safetensors file is a shard: add its tensors instead");
    }
    ck->files.emplace_back(name, std::string(static_cast<const char*>(data), bytes));
    return Status::ok();
  });
}

df11_status df11_checkpoint_set_option(df11_checkpoint* ck, df11_compress_option option,
                                       int64_t value) {
  if (ck == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  return guarded(ck->err, [&] {
    auto out_of_range = [&](const char* what) {
      return Status(ErrorCode::kInvalidArgument,
                    std::string(what) + ": " + std::to_string(value) + " is out of range");
    };
    switch (df11::capi::c_enum_value(option)) {
      case DF11_COMPRESS_THREADS:
        if (value < 0 || value > 4096) return out_of_range("DF11_COMPRESS_THREADS");
        ck->options.threads = static_cast<int>(value);
        return Status::ok();
      case DF11_COMPRESS_GROUP_BY:
        if (value != 0 && value != 1) return out_of_range("DF11_COMPRESS_GROUP_BY (0 or 1)");
        ck->options.group_by =
            value == 0 ? df11::app::GroupBy::kBlock : df11::app::GroupBy::kTensor;
        return Status::ok();
      case DF11_COMPRESS_FORCE:
        if (value != 0 && value != 1) return out_of_range("DF11_COMPRESS_FORCE (0 or 1)");
        ck->options.force = value == 1;
        return Status::ok();
      case DF11_COMPRESS_SHARD_BYTES:
        if (value < 0) return out_of_range("DF11_COMPRESS_SHARD_BYTES");
        ck->shard_bytes = static_cast<uint64_t>(value);
        return Status::ok();
      case DF11_COMPRESS_SOURCE_SHA256:
        if (value != 0 && value != 1) return out_of_range("DF11_COMPRESS_SOURCE_SHA256 (0 or 1)");
        ck->options.source_sha256 = value == 1;
        return Status::ok();
    }
    return Status(ErrorCode::kInvalidArgument,
                  "unknown option " + std::to_string(df11::capi::c_enum_value(option)));
  });
}

df11_status df11_checkpoint_set_progress(df11_checkpoint* ck, df11_progress_fn progress,
                                         void* user) {
  if (ck == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  ck->progress = progress;
  ck->progress_user = user;
  return DF11_OK;
}

df11_status df11_checkpoint_compress(df11_checkpoint* ck, const char* out_dir) {
  if (ck == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  ck->warnings.clear();
  ck->summary.reset();
  return guarded(ck->err, [&] {
    if (out_dir == nullptr || *out_dir == '\0') {
      return Status(ErrorCode::kInvalidArgument, "no output folder given");
    }
    df11::app::CheckpointInMemory checkpoint;
    DF11_RETURN_IF_ERROR(df11::tools::build(*ck, checkpoint));
    df11::app::CompressOptions options = ck->options;
    options.out_dir = out_dir;
    df11::app::CancelToken cancel;
    df11::tools::CallbackReporter reporter(ck->progress, ck->progress_user, cancel);
    auto summary = df11::app::compress_checkpoint(checkpoint, options, reporter, cancel);
    ck->warnings = reporter.take_lines();
    if (!summary) return summary.status();
    ck->summary = std::move(summary).value();
    return Status::ok();
  });
}

size_t df11_checkpoint_warning_count(const df11_checkpoint* ck) {
  return ck == nullptr ? 0 : ck->warnings.size();
}

const char* df11_checkpoint_warning(const df11_checkpoint* ck, size_t i) {
  return ck == nullptr || i >= ck->warnings.size() ? nullptr : ck->warnings[i].c_str();
}

uint64_t df11_checkpoint_result(const df11_checkpoint* ck, df11_compress_result which) {
  if (ck == nullptr || !ck->summary) return 0;
  const df11::app::CompressSummary& s = *ck->summary;
  switch (which) {
    case DF11_RESULT_INPUT_BYTES:
      return s.input_bytes;
    case DF11_RESULT_OUTPUT_BYTES:
      return s.output_bytes;
    case DF11_RESULT_SHARDS:
      return s.shards;
    case DF11_RESULT_TENSORS:
      return s.tensors;
    case DF11_RESULT_TENSORS_CODED:
      return s.tensors_coded;
    case DF11_RESULT_GROUPS_CODED:
      return s.groups_coded;
    case DF11_RESULT_GROUPS_RAW:
      return s.groups_raw;
  }
  return 0;
}

}  // extern "C"
