#include "compress.h"

#include <cstdio>
#include <map>
#include <vector>

#include "byte_units.h"
#include "compress_layout.h"
#include "compress_plan.h"
#include "count_text.h"
#include "df11/file_io.h"
#include "df11/hash.h"
#include "df11/metadata.h"
#include "df11/sha256.h"
#include "df11_folder.h"
#include "dtype_shares.h"
#include "file_stream.h"
#include "file_writer.h"
#include "folder_record.h"
#include "folder_structure.h"
#include "group_writer.h"
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
Result<std::string> write_raw_tensor(const ModelFolder& folder, const TensorLocation& at,
                                     const FileWriter& file, uint64_t offset, Reporter& reporter,
                                     const CancelToken& cancel) {
  const TensorInfo& t = folder.tensor(at);
  Xxh3 hash;
  uint64_t done = 0;
  Status status = stream_file_range(
      folder.shards[at.shard].mapped(), t.file_offset, t.byte_size(),
      [&](std::span<const uint8_t> bytes) {
        hash.update(bytes);
        DF11_RETURN_IF_ERROR(file.write(offset + done, bytes));
        done += bytes.size();
        reporter.progress_advance(bytes.size());
        return Status::ok();
      },
      cancel);
  if (!status)
    return status.with_context(folder.shard_names[at.shard] + ": tensor '" + t.name + "'");
  folder.shards[at.shard].release(t);
  return hash.hex_digest();
}

struct ShardResult {
  uint64_t file_size = 0;
};

Result<ShardResult> write_shard(const ModelFolder& folder, const CompressPlan& plan, ShardOut& out,
                                const fs::path& dir, SourceHasher& hasher, GroupScratch& scratch,
                                const CompressOptions& options, Reporter& reporter,
                                const CancelToken& cancel) {
  const std::string& name = folder.shard_names[out.shard];
  DF11_ASSIGN_OR_RETURN(FinalizedLayout layout, lay_out_shard(folder, plan, out));
  DF11_ASSIGN_OR_RETURN(OutputFile file, OutputFile::create((dir / name).string()));
  DF11_RETURN_IF_ERROR(file.preallocate(layout.file_size));
  const FileWriter writer(file);

  ShardResult result;
  for (const ShardItem& item : out.items) {
    if (!item.is_group) {
      const TensorLocation& at = plan.order[item.index];
      DF11_ASSIGN_OR_RETURN(
          out.metadata.tensors[item.meta_index].xxh3,
          write_raw_tensor(folder, at, writer, layout.tensor_offsets[item.first_tensor], reporter,
                           cancel));
      continue;
    }
    const PlannedGroup& group = plan.groups[item.index];
    const std::string what = group_context(folder, plan, group.spec);
    DF11_ASSIGN_OR_RETURN(MemberSpans spans, group_member_spans(folder, plan, group.spec));
    std::vector<MemberSource> sources;
    for (size_t m : group.spec.members) {
      const TensorLocation& at = plan.order[m];
      sources.push_back({&folder.shards[at.shard].mapped(), folder.tensor(at).file_offset});
    }
    StoredOffsets offsets;
    for (size_t k = 0; k < offsets.size(); ++k) {
      offsets[k] = layout.tensor_offsets[item.first_tensor + k];
    }
    DF11_ASSIGN_OR_RETURN(GroupWriteResult written,
                          write_group(spans, sources, group.plan, writer, offsets,
                                      options.step_weights, scratch, reporter, cancel, what));
    // Per-step releases leave fault-around pages (up to 64 KiB per boundary): sweep them.
    for (size_t m : group.spec.members) {
      const TensorLocation& at = plan.order[m];
      folder.shards[at.shard].release(folder.tensor(at));
    }
    GroupMeta& meta = out.metadata.groups[item.meta_index];
    meta.stored = written.stored;
    for (size_t k = 0; k < meta.members.size(); ++k) meta.members[k].xxh3 = written.member_xxh3[k];
    reporter.detail(what + ": " + count_of(group.spec.members.size(), "tensor") + ", " +
                    count_of(group.plan.n_elements, "weight") + ", " +
                    std::to_string(group.plan.code.max_length) + "-bit longest code, max " +
                    std::to_string(written.max_block_weights) + " weights per block");
  }

  for (size_t k = 0; k < out.source_shards.size(); ++k) {
    DF11_ASSIGN_OR_RETURN(out.metadata.sources[k].sha256, hasher.get(out.source_shards[k]));
  }
  DF11_ASSIGN_OR_RETURN(FinalizedLayout final_layout, lay_out_shard(folder, plan, out));
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
Result<std::vector<FolderFile>> write_folder_files(const ModelFolder& folder,
                                                   const CompressPlan& plan,
                                                   const std::vector<ShardOut>& shards,
                                                   const std::string& config, const fs::path& dir,
                                                   Reporter& reporter, const CancelToken& cancel) {
  std::vector<std::string> written{kConfigFile};
  DF11_RETURN_IF_ERROR(write_file_atomic((dir / kConfigFile).string(), config));
  if (folder.index_text) {
    std::map<std::string, std::string> weight_map;
    uint64_t total_tensor_bytes = 0;
    for (const ShardOut& out : shards) {
      ShardContents contents = shard_contents(folder, plan, out);
      for (std::string& name : contents.tensor_names) {
        weight_map.emplace(std::move(name), folder.shard_names[out.shard]);
      }
      total_tensor_bytes += contents.tensor_bytes;
    }
    DF11_ASSIGN_OR_RETURN(std::string index,
                          make_index(folder.index_text, weight_map, total_tensor_bytes));
    DF11_RETURN_IF_ERROR(write_file_atomic((dir / folder.index_name).string(), index));
    written.push_back(folder.index_name);
  }
  DF11_RETURN_IF_ERROR(copy_side_files(
      folder.dir, dir, folder.side_files, [&](uint64_t n) { reporter.progress_advance(n); },
      cancel));
  written.insert(written.end(), folder.side_files.begin(), folder.side_files.end());
  return hash_folder_files(dir, std::move(written), cancel);
}

uint64_t side_file_bytes(const ModelFolder& folder) {
  uint64_t total = 0;
  for (const std::string& rel : folder.side_files) {
    std::error_code ec;
    const uint64_t size = fs::file_size(folder.dir / rel, ec);
    if (!ec) total += size;
  }
  return total;
}

Result<CompressSummary> compress_model_limited(const CompressOptions& options, Reporter& reporter,
                                               const CancelToken& cancel) {
  const Stopwatch started;
  DF11_RETURN_IF_ERROR(check_distinct_folders(options.model_dir, options.out_dir));
  // A folder, or a single .safetensors file (BFL/ComfyUI checkpoints come so, without
  // config.json).
  DF11_ASSIGN_OR_RETURN(ModelFolder folder, open_model_path(options.model_dir, cancel));
  if (is_df11_model(folder)) {
    return Status(ErrorCode::kInvalidArgument,
                  options.model_dir.string() +
                      ": this folder is already DF11 (decompress or verify it: df11 decompress " +
                      options.model_dir.string() + " -o OUT_DIR; df11 verify " +
                      options.model_dir.string() + ")");
  }
  DF11_RETURN_IF_ERROR(require_bf16_weights(folder));
  DF11_ASSIGN_OR_RETURN(StagingDir staging, StagingDir::create(options.out_dir, options.force));
  std::vector<std::string> shard_paths;
  for (size_t s = 0; s < folder.shards.size(); ++s) shard_paths.push_back(folder.shard_path(s));
  SourceHasher hasher(shard_paths, helper_threads(4), cancel);

  const Stopwatch planning;
  DF11_ASSIGN_OR_RETURN(CompressPlan plan, plan_compression(folder, options.group_by, reporter,
                                                            cancel, options.chunk_weights));
  reporter.detail("planned " + count_of(plan.groups.size(), "group") + " in " + planning.text());
  // spec 7.2: without a config.json df11 writes one for the loader (dfloat11_config alone)
  // and records no original of it: restoration leaves it out.
  DF11_ASSIGN_OR_RETURN(std::string config,
                        make_df11_config(folder.config_text.value_or("{}"), plan.pattern_dict));
  std::vector<SideFile> changed;
  if (folder.config_text) changed.push_back(side_file(kConfigFile, *folder.config_text));
  if (folder.index_text) changed.push_back(side_file(folder.index_name, *folder.index_text));
  std::vector<ShardOut> shards =
      assign_shards(folder, plan, std::move(changed), "df11 " DF11_VERSION_STRING);

  CompressSummary summary;
  uint64_t total = side_file_bytes(folder);
  for (const TensorLocation& at : plan.order) total += folder.tensor(at).byte_size();
  reporter.progress_start("compressing", total);
  // spec 7.7: the first shard records every shard and every other file of the folder.
  DF11_ASSIGN_OR_RETURN(
      shards.front().metadata.folder_files,
      write_folder_files(folder, plan, shards, config, staging.path(), reporter, cancel));
  shards.front().metadata.shards.emplace();
  for (const ShardOut& out : shards) {  // sorted, as the input shards are
    shards.front().metadata.shards->push_back(folder.shard_names[out.shard]);
  }
  GroupScratch scratch;
  for (ShardOut& out : shards) {
    DF11_ASSIGN_OR_RETURN(
        ShardResult written,
        write_shard(folder, plan, out, staging.path(), hasher, scratch, options, reporter, cancel));
    summary.output_bytes += written.file_size;
  }
  for (const SafetensorsFile& shard : folder.shards)
    summary.input_bytes += shard.header().file_size;
  reporter.progress_finish();
  DF11_RETURN_IF_ERROR(cancel.check());
  // Never report success for a folder that verify would reject: its structure is checked
  // (headers, record, index; nothing decoded) before it is renamed into place.
  const Stopwatch checking;
  DF11_RETURN_IF_ERROR(check_written_folder(staging.path(), cancel));
  reporter.detail("checked the structure of what was written in " + checking.text());
  DF11_RETURN_IF_ERROR(staging.commit());

  summary.shards = folder.shards.size();
  summary.tensors = plan.order.size();
  for (const PlannedGroup& g : plan.groups) {
    if (g.coded && !g.spec.alias_name.empty()) {
      summary.tied_copies.push_back(g.spec.alias_name + " = " +
                                    folder.tensor(plan.order[g.spec.members.front()]).name);
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

}  // namespace

Result<CompressSummary> compress_model(const CompressOptions& options, Reporter& reporter,
                                       const CancelToken& cancel) {
  return run_with_thread_limit(options.threads,
                               [&] { return compress_model_limited(options, reporter, cancel); });
}

}  // namespace df11::app
