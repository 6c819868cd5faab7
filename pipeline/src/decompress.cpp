#include "df11/decompress.h"

#include <cstdio>
#include <mutex>
#include <unordered_set>

#include "df11/count_text.h"
#include "df11/df11_folder.h"
#include "df11/file_io.h"
#include "df11/folder_record.h"
#include "df11/hash.h"
#include "df11/model_folder.h"
#include "df11/sha256.h"
#include "file_writer.h"
#include "output_dir.h"
#include "rebuild.h"
#include "restore_published.h"
#include "stopwatch.h"
#include "thread_limit.h"

namespace df11::app {
namespace fs = std::filesystem;

namespace {

class FileSink : public RebuildSink {
 public:
  explicit FileSink(const OutputFile& file) : writer_(file) {}
  Status write(uint64_t offset, std::span<const uint8_t> bytes) override {
    return writer_.write(offset, bytes);
  }

 private:
  FileWriter writer_;
};

Status restore_side_file(const SideFile& side, const fs::path& dir) {
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(side.content.data()),
                                       side.content.size());
  const std::string digest = sha256_hex(bytes);
  if (side.content.size() != side.size || digest != side.sha256) {
    return Status(ErrorCode::kCorruptData,
                  side.file + ": recorded content has " + std::to_string(side.content.size()) +
                      " bytes with sha256 " + digest + ", the metadata records " +
                      std::to_string(side.size) + " bytes with sha256 " + side.sha256);
  }
  return write_file_atomic((dir / side.file).string(), side.content);
}

Result<DecompressSummary> decompress_model_limited(const DecompressOptions& options,
                                                   Reporter& reporter, const CancelToken& cancel) {
  const Stopwatch started;
  DF11_RETURN_IF_ERROR(check_distinct_folders(options.df11_dir, options.out_dir));
  DF11_ASSIGN_OR_RETURN(ModelFolder model, open_model_folder(options.df11_dir, cancel));
  if (!is_df11_model(model)) return not_a_df11_folder(model.dir);
  if (!written_by_df11(model)) {
    if (options.file_sha256) {
      return Status(ErrorCode::kInvalidArgument,
                    "--sha256: " + options.df11_dir.string() +
                        " has no df11 metadata (published by the dfloat11 tools): no file "
                        "SHA-256 was recorded to check against");
    }
    return restore_published_folder(std::move(model), options, reporter, cancel);
  }
  if (options.like) {
    return Status(ErrorCode::kInvalidArgument,
                  "--like: " + options.df11_dir.string() +
                      " was written by df11 and records every shape; --like is for folders "
                      "published by the dfloat11 tools");
  }
  DF11_ASSIGN_OR_RETURN(Df11Folder folder, open_df11_folder(std::move(model)));
  if (options.file_sha256) DF11_RETURN_IF_ERROR(require_recorded_sha256(folder, "--sha256"));
  DF11_RETURN_IF_ERROR(check_side_files_recorded(folder));
  // spec 5.2 and 7.7: a corrupted header or folder file is refused before anything is written
  // (the copied files would carry the corruption into the restored folder).
  DF11_RETURN_IF_ERROR(first_header_failure(folder));
  DF11_ASSIGN_OR_RETURN(FolderFindings findings, check_folder_record(folder, cancel));
  if (!findings.failures.empty()) {
    return Status(ErrorCode::kCorruptData,
                  findings.failures.front().message +
                      (findings.failures.size() > 1
                           ? " (and " + std::to_string(findings.failures.size() - 1) +
                                 " more problems: run df11 verify)"
                           : std::string()));
  }
  for (const std::string& line : findings.warnings) reporter.warning(line);
  DF11_ASSIGN_OR_RETURN(StagingDir staging, StagingDir::create(options.out_dir, options.force));

  DecompressSummary summary;
  std::unordered_set<std::string> restored_names;
  for (const SideFile& side : folder.side_files) restored_names.insert(side.file);
  // spec 7.6 step 4: the publication's own files (df11's model card, the Hub's
  // .gitattributes) are no files of the original.
  std::unordered_set<std::string> publication(findings.publication_files.begin(),
                                              findings.publication_files.end());
  uint64_t total = 0;
  for (const SourceRef& ref : folder.sources) total += folder.source(ref).size;
  std::vector<std::string> copies;
  for (const std::string& rel : folder.folder.side_files) {
    if (restored_names.count(rel) != 0) continue;  // the recorded original wins
    if (publication.count(rel) != 0) {
      reporter.detail(rel + ": not a file of the original model: not restored");
      continue;
    }
    copies.push_back(rel);
    std::error_code ec;
    total += fs::file_size(folder.folder.dir / rel, ec);
  }
  reporter.progress_start("restoring  ", total);

  RebuildOptions rebuild_options;
  rebuild_options.check_file_sha256 = options.file_sha256;
  rebuild_options.cancel = &cancel;
  rebuild_options.on_bytes = [&](uint64_t n) { reporter.progress_advance(n); };
  std::mutex mutex;  // guards summary
  const size_t n_sources = folder.sources.size();
  DF11_RETURN_IF_ERROR(for_each_source(
      folder, DecodeDevice::kCpu, n_sources,
      options.parallel_files != 0 ? options.parallel_files
                                  : source_parallelism(n_sources, DecodeDevice::kCpu),
      rebuild_options,
      [&](size_t i, TensorProducer& producer, const RebuildOptions& options) -> Status {
        const SourceFile& source = folder.source(folder.sources[i]);
        DF11_ASSIGN_OR_RETURN(OutputFile file,
                              OutputFile::create((staging.path() / source.file).string()));
        DF11_RETURN_IF_ERROR(file.preallocate(source.size));
        RebuildResult rebuilt;
        {
          FileSink sink(file);
          DF11_ASSIGN_OR_RETURN(rebuilt, rebuild_source(folder, source, producer, sink, options));
        }
        const Stopwatch committing;
        DF11_RETURN_IF_ERROR(file.commit());
        reporter.detail("restored " + source.file + " (" + count_of(rebuilt.tensors, "tensor") +
                        (options.check_file_sha256 ? ", sha256 " + source.sha256 : "") +
                        "), fsync and rename " + committing.text());
        std::lock_guard<std::mutex> lock(mutex);
        ++summary.files;
        summary.tensors += rebuilt.tensors;
        summary.output_bytes += source.size;
        return Status::ok();
      }));
  for (const SideFile& side : folder.side_files) {
    DF11_RETURN_IF_ERROR(restore_side_file(side, staging.path()));
  }
  DF11_RETURN_IF_ERROR(copy_side_files(
      folder.folder.dir, staging.path(), copies, [&](uint64_t n) { reporter.progress_advance(n); },
      cancel));
  reporter.progress_finish();
  DF11_RETURN_IF_ERROR(cancel.check());
  DF11_RETURN_IF_ERROR(staging.commit());

  summary.side_files = folder.side_files.size() + copies.size();
  for (const SafetensorsFile& shard : folder.folder.shards) {
    summary.input_bytes += shard.header().file_size;
  }
  summary.seconds = started.seconds();
  return summary;
}

}  // namespace

Result<DecompressSummary> decompress_model(const DecompressOptions& options, Reporter& reporter,
                                           const CancelToken& cancel) {
  return run_with_thread_limit(options.threads,
                               [&] { return decompress_model_limited(options, reporter, cancel); });
}

}  // namespace df11::app
