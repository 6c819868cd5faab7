#include "df11/compress.h"

#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "compress_layout.h"
#include "compress_plan.h"
#include "df11/byte_units.h"
#include "df11/count_text.h"
#include "df11/df11_folder.h"
#include "df11/dtype_shares.h"
#include "df11/file_io.h"
#include "df11/folder_record.h"
#include "df11/hash.h"
#include "df11/metadata.h"
#include "df11/model_config.h"
#include "df11/model_folder.h"
#include "df11/sha256.h"
#include "df11/source_hasher.h"
#include "file_stream.h"
#include "file_writer.h"
#include "folder_source.h"
#include "folder_structure.h"
#include "group_writer.h"
#include "memory_source.h"
#include "output_dir.h"
#include "parallel_tasks.h"
#include "phase_times.h"
#include "shard_writer.h"
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

struct ShardResult {
  uint64_t file_size = 0;
};

Result<ShardResult> write_shard(const CheckpointSource& source, const CompressPlan& plan,
                                ShardOut& out, const fs::path& dir, SourceHasher* hasher,
                                const CompressOptions& options, Reporter& reporter,
                                const CancelToken& cancel, std::vector<std::string>& details,
                                PhaseTimes& phases) {
  const std::string& name = source.shard_name(out.shard);
  std::optional<PhaseTimer> setup(std::in_place, &phases, "shard set-up");
  DF11_ASSIGN_OR_RETURN(FinalizedLayout layout, lay_out_shard(source, plan, out));
  DF11_ASSIGN_OR_RETURN(OutputFile file, OutputFile::create((dir / name).string()));
  DF11_RETURN_IF_ERROR(file.preallocate(layout.file_size));
  const FileWriter writer(file);
  setup.reset();

  ShardResult result;
  {
    const PhaseTimer timer(&phases, "shard items (coded | written)");
    DF11_RETURN_IF_ERROR(write_shard_items(source, plan, out, layout, writer, options.step_weights,
                                           /*hash_members=*/hasher == nullptr, reporter, cancel,
                                           details, &phases));
  }

  if (hasher != nullptr) {
    // The source file's SHA-256, and the members' XXH3 (spec 5.2), from the hasher, which
    // reads every byte of every file anyway; a member may lie in another file.
    const PhaseTimer timer(&phases, "source hashes wait");
    std::map<size_t, SourceDigests> files;
    auto digests_of = [&](size_t shard) -> Result<const SourceDigests*> {
      auto found = files.find(shard);
      if (found == files.end()) {
        DF11_ASSIGN_OR_RETURN(SourceDigests d, hasher->get(shard));
        found = files.emplace(shard, std::move(d)).first;
      }
      return &found->second;
    };
    // Each original this shard records (its own, and those left without a shard of their
    // own: spec 7.5).
    for (size_t k = 0; k < out.source_shards.size(); ++k) {
      DF11_ASSIGN_OR_RETURN(const SourceDigests* d, digests_of(out.source_shards[k]));
      out.metadata.sources[k].sha256 = d->sha256;
    }
    for (const ShardItem& item : out.items) {
      if (!item.is_group) continue;
      const PlannedGroup& group = plan.groups[item.index];
      GroupMeta& meta = out.metadata.groups[item.meta_index];
      for (size_t k = 0; k < meta.members.size(); ++k) {
        const TensorLocation& at = plan.order[group.spec.members[k]];
        DF11_ASSIGN_OR_RETURN(const SourceDigests* d, digests_of(at.shard));
        meta.members[k].xxh3 = d->xxh3.at(at.tensor);
      }
    }
  }
  const PhaseTimer finishing(&phases, "header, fsync, rename");
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
  details.push_back(name + ": written (" + format_bytes(final_layout.file_size) +
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

// -v: when the originals' SHA-256 ran and how fast, the last to finish first (at most
// four). The largest file's is the shortest compress can take on many cores, so it should
// start at once and run at one core's speed.
std::string source_hash_timings(const CheckpointSource& source, const SourceHasher& hasher) {
  const std::vector<SourceHasher::Timing> timings = hasher.timings();
  std::vector<size_t> order(timings.size());
  for (size_t s = 0; s < order.size(); ++s) order[s] = s;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return timings[a].finished > timings[b].finished; });
  constexpr size_t kShown = 4;
  std::string text = "source SHA-256 (seconds since hashing began):";
  for (size_t k = 0; k < std::min(kShown, order.size()); ++k) {
    const size_t s = order[k];
    const SourceHasher::Timing& t = timings[s];
    const uint64_t bytes = source.header(s).file_size;
    const double took = t.finished - t.started;
    char line[256];
    if (t.started < 0 || took < 0) {
      std::snprintf(line, sizeof line, " %s not hashed;", source.shard_name(s).c_str());
    } else {
      std::snprintf(line, sizeof line, " %s (%s) %.2f-%.2f s, %.2f GB/s%s;",
                    source.shard_name(s).c_str(), format_bytes(bytes).c_str(), t.started,
                    t.finished, took > 0 ? static_cast<double>(bytes) / 1e9 / took : 0.0,
                    t.on_caller ? " by its shard's writer" : "");
    }
    text += line;
  }
  if (order.size() > kShown) {
    text += ' ';
    text += count_of(order.size() - kShown, "other");
    text += " before;";
  }
  text.pop_back();
  return text;
}

// How many shards are written side by side: as many as the memory bound (1.5 x the largest
// group + 256 MB) leaves room for beside the process's own ~100 MB, at most one per thread.
size_t shards_side_by_side(const CheckpointSource& source, const CompressPlan& plan, size_t shards,
                           uint64_t step_weights) {
  uint64_t largest = 0;
  for (const PlannedGroup& g : plan.groups) {
    if (!g.coded) continue;
    uint64_t bytes = 0;
    for (size_t m : g.spec.members) bytes += source.tensor(plan.order[m]).byte_size();
    largest = std::max(largest, bytes);
  }
  const uint64_t budget = largest + largest / 2 + (uint64_t{160} << 20);
  const uint64_t fit = budget / std::max<uint64_t>(1, shard_pipeline_bytes(step_weights));
  return static_cast<size_t>(std::clamp<uint64_t>(
      fit, 1, std::min<uint64_t>(shards, std::max<size_t>(1, allowed_threads()))));
}

// Pass 2 for every shard, `side_by_side` at a time. The first failure stops the others and
// is returned (the lowest shard's, if several failed on their own).
Result<std::vector<ShardResult>> write_shards(const CheckpointSource& source,
                                              const CompressPlan& plan,
                                              std::vector<ShardOut>& shards, const fs::path& dir,
                                              SourceHasher* hasher, const CompressOptions& options,
                                              Reporter& reporter, const CancelToken& cancel,
                                              size_t side_by_side, PhaseTimes& phases) {
  const size_t n = shards.size();
  std::vector<std::optional<Result<ShardResult>>> results(n);
  std::vector<std::vector<std::string>> details(n);
  CancelToken stop(&cancel);  // stops the other shards after a failure
  std::atomic<size_t> next{0};
  run_tasks(side_by_side, [&](size_t) {
    for (size_t s = next.fetch_add(1); s < n; s = next.fetch_add(1)) {
      results[s].emplace(write_shard(source, plan, shards[s], dir, hasher, options, reporter, stop,
                                     details[s], phases));
      if (!results[s]->is_ok()) stop.cancel("another shard's failure");
    }
  });
  for (const auto& lines : details) {
    for (const std::string& line : lines) reporter.detail(line);
  }
  const Status* first_failure = nullptr;
  for (const auto& r : results) {
    if (r->is_ok()) continue;
    // A shard stopped because another failed says less than the one that failed.
    const bool stopped = r->status().code() == ErrorCode::kInterrupted && !cancel.cancelled();
    if (!stopped) return r->status();
    if (first_failure == nullptr) first_failure = &r->status();
  }
  if (first_failure != nullptr) return *first_failure;
  std::vector<ShardResult> written;
  for (auto& r : results) written.push_back(r->value());
  return written;
}

Result<CompressSummary> compress_planned(const CompressOptions& options, Reporter& reporter,
                                         const CancelToken& cancel, const CheckpointSource& source,
                                         StagingDir& staging, SourceHasher* hasher,
                                         PhaseTimes& phases, const Stopwatch& started) {
  const Stopwatch planning;
  DF11_ASSIGN_OR_RETURN(
      CompressPlan plan,
      plan_compression(source, options.group_by, reporter, cancel, options.chunk_weights, &phases));
  phases.add("planning", planning.seconds());
  reporter.detail("planned " + count_of(plan.groups.size(), "group") + " in " + planning.text());
  // spec 7.2: without a config.json df11 writes one for the loader (dfloat11_config alone)
  // and records no original of it: restoration leaves it out.
  DF11_ASSIGN_OR_RETURN(std::string config,
                        make_df11_config(source.config_text().value_or("{}"), plan.pattern_dict));
  std::vector<SideFile> changed;
  if (source.config_text()) changed.push_back(side_file(kConfigFile, *source.config_text()));
  if (source.index_text()) changed.push_back(side_file(source.index_name(), *source.index_text()));
  std::vector<ShardOut> shards =
      assign_shards(source, plan, std::move(changed), "df11 " DF11_VERSION_STRING);
  if (hasher == nullptr) {
    // spec 5.3 (1.2): `sources[].sha256` is optional; not recorded, it is left out.
    for (ShardOut& out : shards) {
      for (SourceFile& file : out.metadata.sources) file.sha256.clear();
    }
  }

  CompressSummary summary;
  uint64_t total = source.side_file_bytes();
  for (const TensorLocation& at : plan.order) total += source.tensor(at).byte_size();
  reporter.progress_start("compressing", total);
  // spec 7.7: the first shard records every shard and every other file of the folder.
  {
    const PhaseTimer timer(&phases, "side files");
    DF11_ASSIGN_OR_RETURN(
        shards.front().metadata.folder_files,
        write_folder_files(source, plan, shards, config, staging.path(), reporter, cancel));
  }
  shards.front().metadata.shards.emplace();
  for (const ShardOut& out : shards) {  // sorted, as the input shards are
    shards.front().metadata.shards->push_back(source.shard_name(out.shard));
  }
  const size_t side_by_side =
      shards_side_by_side(source, plan, shards.size(), options.step_weights);
  const Stopwatch writing;
  DF11_ASSIGN_OR_RETURN(std::vector<ShardResult> written,
                        write_shards(source, plan, shards, staging.path(), hasher, options,
                                     reporter, cancel, side_by_side, phases));
  phases.add("writing (" + count_of(side_by_side, "shard") + " side by side)", writing.seconds());
  if (hasher != nullptr) reporter.detail(source_hash_timings(source, *hasher));
  for (size_t s = 0; s < shards.size(); ++s) summary.output_bytes += written[s].file_size;
  for (size_t s = 0; s < source.shard_count(); ++s) {
    summary.input_bytes += source.header(s).file_size;
  }
  reporter.progress_finish();
  DF11_RETURN_IF_ERROR(cancel.check());
  {
    // Never report success for a folder that verify would reject: its structure is checked
    // (headers, record, index; nothing decoded) before it is renamed into place.
    const PhaseTimer timer(&phases, "structure check");
    const Stopwatch checking;
    DF11_RETURN_IF_ERROR(check_written_folder(staging.path(), cancel));
    reporter.detail("checked the structure of what was written in " + checking.text());
  }
  {
    const PhaseTimer timer(&phases, "commit folder");
    DF11_RETURN_IF_ERROR(staging.commit());
  }
  reporter.detail("phases (seconds, summed over the threads that ran them): " + phases.text());

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

// CompressOptions::step_weights, 0 resolved: one chunk per thread allowed now.
uint64_t resolved_step_weights(const CompressOptions& options) {
  if (options.step_weights != 0) return options.step_weights;
  const uint64_t chunk = std::max<uint64_t>(1, options.chunk_weights);
  return std::clamp<uint64_t>(chunk * allowed_threads(), chunk,
                              std::max(chunk, kMaxAutoStepWeights));
}

// Both entry points from here on, once the source is checked (config.json present, BF16
// weights). `started`: when the command began (the summary's seconds).
Result<CompressSummary> compress_source(const CheckpointSource& source,
                                        const CompressOptions& requested, Reporter& reporter,
                                        const CancelToken& cancel, PhaseTimes& phases,
                                        const Stopwatch& started) {
  CompressOptions options = requested;
  options.step_weights = resolved_step_weights(requested);
  DF11_ASSIGN_OR_RETURN(StagingDir staging, StagingDir::create(options.out_dir, options.force));
  // The largest file's SHA-256 is the critical path on many cores: it starts now, as tasks
  // that idle workers take while this thread plans. Its XXH3 of every tensor (in header
  // order) gives the members' checksums. Without it (the default) the originals are
  // not read for hashing at all: the coding pass hashes the members.
  std::optional<SourceHasher> hasher;
  if (options.source_sha256) {
    hasher.emplace(
        source.shard_count(),
        [&source, &cancel](size_t s, const std::atomic<bool>* stop, bool read_ahead) {
          return source.shard_digests(s, stop, cancel, read_ahead);
        },
        /*background=*/allowed_threads() > 1);
  }
  // Isolated: while this thread waits in its parallel loops it runs their pieces only, never
  // a whole file's hashing, which would hold the loop up for seconds.
  return tbb::this_task_arena::isolate([&] {
    return compress_planned(options, reporter, cancel, source, staging, hasher ? &*hasher : nullptr,
                            phases, started);
  });
}

Result<CompressSummary> compress_model_limited(const CompressOptions& options, Reporter& reporter,
                                               const CancelToken& cancel) {
  const Stopwatch started;
  PhaseTimes phases;
  std::optional<PhaseTimer> opening(std::in_place, &phases, "open");
  DF11_RETURN_IF_ERROR(check_distinct_folders(options.model_dir, options.out_dir));
  // A folder, or a single .safetensors file (BFL/ComfyUI checkpoints come so, without
  // config.json).
  DF11_ASSIGN_OR_RETURN(ModelFolder folder, open_model_path(options.model_dir, cancel));
  opening.reset();
  if (is_df11_model(folder)) {
    return Status(ErrorCode::kInvalidArgument,
                  options.model_dir.string() +
                      ": this folder is already DF11 (decompress or verify it: df11 decompress " +
                      options.model_dir.string() + " -o OUT_DIR; df11 verify " +
                      options.model_dir.string() + ")");
  }
  DF11_RETURN_IF_ERROR(require_bf16_weights(folder));
  const FolderSource source(folder);
  return compress_source(source, options, reporter, cancel, phases, started);
}

Result<CompressSummary> compress_checkpoint_limited(const CheckpointInMemory& checkpoint,
                                                    const CompressOptions& options,
                                                    Reporter& reporter, const CancelToken& cancel) {
  const Stopwatch started;
  PhaseTimes phases;
  DF11_ASSIGN_OR_RETURN(std::unique_ptr<MemorySource> source, MemorySource::create(checkpoint));
  std::vector<const SafetensorsHeader*> headers;
  for (size_t s = 0; s < source->shard_count(); ++s) headers.push_back(&source->header(s));
  DF11_RETURN_IF_ERROR(require_bf16_weights(headers, source->where()));
  return compress_source(*source, options, reporter, cancel, phases, started);
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
