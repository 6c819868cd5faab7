#include "compress.h"

#include <cstdio>
#include <map>
#include <memory>
#include <vector>

#include "byte_units.h"
#include "compress_layout.h"
#include "compress_plan.h"
#include "df11/file_io.h"
#include "df11/hash.h"
#include "df11/metadata.h"
#include "df11/sha256.h"
#include "dtype_shares.h"
#include "file_stream.h"
#include "file_writer.h"
#include "folder_record.h"
#include "folder_source.h"
#include "group_writer.h"
#include "memory_source.h"
#include "model_config.h"
#include "model_folder.h"
#include "output_dir.h"
#include "source_hasher.h"
#include "stopwatch.h"
#include "thread_limit.h"

#ifndef DF11_VERSION_STRING
#define DF11_VERSION_STRING "0.0.0"
#endif

namespace df11::app {
namespace fs = std::filesystem;

namespace {

SideFile side_file(const std::string& name, const std::string& content) {
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(content.data()),
                                       content.size());
  return SideFile{name, content.size(), sha256_hex(bytes), content};
}

// Copies a raw tensor to its place in the output, hashing it on the way.
Result<std::string> write_raw_tensor(const CheckpointSource& source, const TensorLocation& at,
                                     const FileWriter& file, uint64_t offset, Reporter& reporter,
                                     const CancelToken& cancel) {
  Xxh3 hash;
  uint64_t done = 0;
  Status status = source.stream_tensor(
      at,
      [&](std::span<const uint8_t> bytes) {
        hash.update(bytes);
        DF11_RETURN_IF_ERROR(file.write(offset + done, bytes));
        done += bytes.size();
        reporter.progress_advance(bytes.size());
        return Status::ok();
      },
      cancel);
  if (!status) {
    return status.with_context(source.shard_name(at.shard) + ": tensor '" + source.tensor(at).name +
                               "'");
  }
  source.release(at);
  return hash.hex_digest();
}

struct ShardResult {
  uint64_t file_size = 0;
};

Result<ShardResult> write_shard(const CheckpointSource& source, const CompressPlan& plan,
                                ShardOut& out, const fs::path& dir, SourceHasher& hasher,
                                GroupScratch& scratch, const CompressOptions& options,
                                Reporter& reporter, const CancelToken& cancel) {
  const std::string& name = source.shard_name(out.shard);
  DF11_ASSIGN_OR_RETURN(FinalizedLayout layout, lay_out_shard(source, plan, out));
  DF11_ASSIGN_OR_RETURN(OutputFile file, OutputFile::create((dir / name).string()));
  DF11_RETURN_IF_ERROR(file.preallocate(layout.file_size));
  const FileWriter writer(file);

  ShardResult result;
  for (const ShardItem& item : out.items) {
    if (!item.is_group) {
      const TensorLocation& at = plan.order[item.index];
      DF11_ASSIGN_OR_RETURN(
          out.metadata.tensors[item.meta_index].xxh3,
          write_raw_tensor(source, at, writer, layout.tensor_offsets[item.first_tensor], reporter,
                           cancel));
      continue;
    }
    const PlannedGroup& group = plan.groups[item.index];
    const std::string what = group_context(source, plan, group.spec);
    DF11_ASSIGN_OR_RETURN(MemberSpans spans, group_member_spans(source, plan, group.spec));
    const MemberBytesDone done_with = [&](size_t member, uint64_t offset, uint64_t length) {
      source.release_range(plan.order[group.spec.members[member]], offset, length);
    };
    StoredOffsets offsets;
    for (size_t k = 0; k < offsets.size(); ++k) {
      offsets[k] = layout.tensor_offsets[item.first_tensor + k];
    }
    DF11_ASSIGN_OR_RETURN(GroupWriteResult written,
                          write_group(spans, done_with, group.plan, writer, offsets,
                                      options.step_weights, scratch, reporter, cancel, what));
    // Per-step releases leave fault-around pages (up to 64 KiB per boundary): sweep them
    // (and free what a source staged).
    for (size_t m : group.spec.members) source.release(plan.order[m]);
    GroupMeta& meta = out.metadata.groups[item.meta_index];
    meta.stored = written.stored;
    for (size_t k = 0; k < meta.members.size(); ++k) meta.members[k].xxh3 = written.member_xxh3[k];
    reporter.detail(what + ": " + std::to_string(group.spec.members.size()) + " tensors, " +
                    std::to_string(group.plan.n_elements) + " weights, " +
                    std::to_string(group.plan.code.max_length) + "-bit longest code, max " +
                    std::to_string(written.max_block_weights) + " weights per block");
  }

  DF11_ASSIGN_OR_RETURN(out.metadata.sources.front().sha256, hasher.get(out.shard));
  DF11_ASSIGN_OR_RETURN(FinalizedLayout final_layout, lay_out_shard(source, plan, out));
  if (final_layout.prefix.size() != layout.prefix.size()) {
    // Checksums are fixed-width hex, so the header cannot change size; if it did, the data
    // already written would sit at the wrong offsets.
    return Status(ErrorCode::kInternal, name + ": header size changed from " +
                                            std::to_string(layout.prefix.size()) + " to " +
                                            std::to_string(final_layout.prefix.size()));
  }
  DF11_RETURN_IF_ERROR(file.pwrite_all(0, final_layout.prefix));
  const Stopwatch committing;
  DF11_RETURN_IF_ERROR(file.commit());
  reporter.detail(name + ": written (" + format_bytes(final_layout.file_size) +
                  "), fsync and rename " + committing.text());
  result.file_size = final_layout.file_size;
  return result;
}

// Everything of the output folder but the shards, written before them: config.json, the
// index and the copied files. Returns their record for the first shard's metadata (spec 7.7),
// hashed from the staging folder: what is recorded is what was written.
Result<std::vector<FolderFile>> write_folder_files(const CheckpointSource& source,
                                                   const CompressPlan& plan,
                                                   const std::vector<ShardOut>& shards,
                                                   const std::string& config, const fs::path& dir,
                                                   Reporter& reporter, const CancelToken& cancel) {
  std::vector<std::string> written{kConfigFile};
  DF11_RETURN_IF_ERROR(write_file_atomic((dir / kConfigFile).string(), config));
  if (source.index_text()) {
    std::map<std::string, std::string> weight_map;
    uint64_t total_tensor_bytes = 0;
    for (const ShardOut& out : shards) {
      ShardContents contents = shard_contents(source, plan, out);
      for (std::string& name : contents.tensor_names) {
        weight_map.emplace(std::move(name), source.shard_name(out.shard));
      }
      total_tensor_bytes += contents.tensor_bytes;
    }
    DF11_ASSIGN_OR_RETURN(std::string index,
                          make_index(source.index_text(), weight_map, total_tensor_bytes));
    DF11_RETURN_IF_ERROR(write_file_atomic((dir / source.index_name()).string(), index));
    written.push_back(source.index_name());
  }
  DF11_RETURN_IF_ERROR(source.write_side_files(
      dir, [&](uint64_t n) { reporter.progress_advance(n); }, cancel));
  written.insert(written.end(), source.side_files().begin(), source.side_files().end());
  return hash_folder_files(dir, std::move(written), cancel);
}

// Both entry points from here on: the source is checked (config.json present, BF16 weights).
// `started`: when the command began (the summary's seconds).
Result<CompressSummary> compress_source(const CheckpointSource& source,
                                        const CompressOptions& options, const Stopwatch& started,
                                        Reporter& reporter, const CancelToken& cancel) {
  DF11_ASSIGN_OR_RETURN(StagingDir staging, StagingDir::create(options.out_dir, options.force));
  SourceHasher hasher(
      source.shard_count(),
      [&](size_t s, const std::atomic<bool>* stop) { return source.shard_sha256(s, stop, cancel); },
      helper_threads(4));

  const Stopwatch planning;
  DF11_ASSIGN_OR_RETURN(CompressPlan plan, plan_compression(source, options.group_by, reporter,
                                                            cancel, options.chunk_weights));
  reporter.detail("planned " + std::to_string(plan.groups.size()) + " groups in " +
                  planning.text());
  DF11_ASSIGN_OR_RETURN(std::string config,
                        make_df11_config(*source.config_text(), plan.pattern_dict));
  std::vector<SideFile> changed{side_file(kConfigFile, *source.config_text())};
  if (source.index_text()) changed.push_back(side_file(source.index_name(), *source.index_text()));
  std::vector<ShardOut> shards =
      assign_shards(source, plan, std::move(changed), "df11 " DF11_VERSION_STRING);

  CompressSummary summary;
  uint64_t total = source.side_file_bytes();
  for (const TensorLocation& at : plan.order) total += source.tensor(at).byte_size();
  reporter.progress_start("compressing", total);
  // spec 7.7: the first shard records every shard and every other file of the folder.
  DF11_ASSIGN_OR_RETURN(
      shards.front().metadata.folder_files,
      write_folder_files(source, plan, shards, config, staging.path(), reporter, cancel));
  std::vector<std::string> shard_names;
  for (size_t s = 0; s < source.shard_count(); ++s) shard_names.push_back(source.shard_name(s));
  shards.front().metadata.shards = std::move(shard_names);  // sorted
  GroupScratch scratch;
  for (ShardOut& out : shards) {
    DF11_ASSIGN_OR_RETURN(
        ShardResult written,
        write_shard(source, plan, out, staging.path(), hasher, scratch, options, reporter, cancel));
    summary.output_bytes += written.file_size;
    summary.input_bytes += source.header(out.shard).file_size;
  }
  reporter.progress_finish();
  DF11_RETURN_IF_ERROR(cancel.check());
  DF11_RETURN_IF_ERROR(staging.commit());

  summary.shards = source.shard_count();
  summary.tensors = plan.order.size();
  for (const PlannedGroup& g : plan.groups) {
    if (g.coded && !g.spec.alias_name.empty()) {
      summary.tied_copies.push_back(g.spec.alias_name + " = " +
                                    source.tensor(plan.order[g.spec.members.front()]).name);
      for (uint64_t bytes : stored_sizes(g.plan)) summary.tied_copy_bytes += bytes;
    } else if (g.coded) {
      ++summary.groups_coded;
      summary.tensors_coded += g.spec.members.size();
      for (uint64_t bytes : stored_sizes(g.plan)) summary.coded_output_bytes += bytes;
    } else {
      ++summary.groups_raw;
    }
  }
  summary.tensors_raw = summary.tensors - summary.tensors_coded;
  summary.coded_input_bytes = plan.coded_weight_bytes;
  summary.seconds = started.seconds();
  return summary;
}

Result<CompressSummary> compress_model_limited(const CompressOptions& options, Reporter& reporter,
                                               const CancelToken& cancel) {
  const Stopwatch started;
  DF11_RETURN_IF_ERROR(check_distinct_folders(options.model_dir, options.out_dir));
  DF11_ASSIGN_OR_RETURN(ModelFolder folder, open_model_folder(options.model_dir, cancel));
  if (!folder.config_text) {
    return Status(ErrorCode::kNotFound, (folder.dir / kConfigFile).string() +
                                            ": not found (a Hugging Face checkpoint has one)");
  }
  DF11_RETURN_IF_ERROR(require_bf16_weights(folder));
  const FolderSource source(folder);
  return compress_source(source, options, started, reporter, cancel);
}

Result<CompressSummary> compress_checkpoint_limited(const CheckpointInMemory& checkpoint,
                                                    const CompressOptions& options,
                                                    Reporter& reporter, const CancelToken& cancel) {
  const Stopwatch started;
  DF11_ASSIGN_OR_RETURN(std::unique_ptr<MemorySource> source, MemorySource::create(checkpoint));
  std::vector<const SafetensorsHeader*> headers;
  for (size_t s = 0; s < source->shard_count(); ++s) headers.push_back(&source->header(s));
  DF11_RETURN_IF_ERROR(require_bf16_weights(headers, source->where()));
  return compress_source(*source, options, started, reporter, cancel);
}

}  // namespace

Result<CompressSummary> compress_model(const CompressOptions& options, Reporter& reporter,
                                       const CancelToken& cancel) {
  return run_with_thread_limit(options.threads,
                               [&] { return compress_model_limited(options, reporter, cancel); });
}

Result<CompressSummary> compress_checkpoint(const CheckpointInMemory& checkpoint,
                                            const CompressOptions& options, Reporter& reporter,
                                            const CancelToken& cancel) {
  return run_with_thread_limit(options.threads, [&] {
    return compress_checkpoint_limited(checkpoint, options, reporter, cancel);
  });
}

}  // namespace df11::app
