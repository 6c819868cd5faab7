#include "inspect_model.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "dtype_shares.h"
#include "inspect_bf16.h"
#include "inspect_df11.h"
#include "model_folder.h"
#include "thread_limit.h"

namespace df11::app {
namespace {

namespace fs = std::filesystem;

// A single .safetensors file seen as a folder of one shard (no config.json, no side files).
Result<ModelFolder> open_single_file(const fs::path& path) {
  ModelFolder folder;
  folder.dir = path.parent_path();
  folder.shard_names.push_back(path.filename().string());
  DF11_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(path.string()));
  folder.shards.push_back(std::move(file));
  const auto& tensors = folder.shards.back().header().tensors;
  for (size_t t = 0; t < tensors.size(); ++t)
    folder.tensors.emplace(tensors[t].name, TensorLocation{0, t});
  return folder;
}

Result<InspectReport> inspect_limited(const InspectOptions& options, Reporter& reporter,
                                      const CancelToken& cancel) {
  std::error_code ec;
  const fs::path path(options.path);
  Result<ModelFolder> folder =
      fs::is_directory(path, ec) ? open_model_folder(path, cancel) : open_single_file(path);
  if (!folder) return folder.status();
  InspectReport report;
  report.path = options.path;
  report.dtypes = dtype_shares(*folder);
  if (is_df11_checkpoint(*folder)) {
    if (options.zstd) {
      reporter.note(
          "--baseline zstd applies to BF16 checkpoints; run it on the original (or on the "
          "output of df11 decompress)");
    }
    describe_files(*folder, report);
    if (options.headers_only) {
      std::vector<const SafetensorsHeader*> headers;
      for (const SafetensorsFile& shard : folder->shards) headers.push_back(&shard.header());
      DF11_RETURN_IF_ERROR(
          describe_df11_checkpoint(headers, folder->shard_names, folder->config_text, report));
    } else {
      DF11_RETURN_IF_ERROR(analyze_df11_checkpoint(*folder, report, cancel));
    }
  } else {
    report.kind = CheckpointKind::kBf16;
    DF11_RETURN_IF_ERROR(predict_bf16_checkpoint(*folder, options.zstd, report, cancel));
  }
  return report;
}

}  // namespace

Result<InspectReport> inspect_model(const InspectOptions& options, Reporter& reporter,
                                    const CancelToken& cancel) {
  return run_with_thread_limit(options.threads,
                               [&] { return inspect_limited(options, reporter, cancel); });
}

}  // namespace df11::app
