#include "df11/inspect_model.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "df11/dtype_shares.h"
#include "df11/model_folder.h"
#include "inspect_bf16.h"
#include "inspect_df11.h"
#include "thread_limit.h"

namespace df11::app {
namespace {

namespace fs = std::filesystem;

Result<InspectReport> inspect_limited(const InspectOptions& options, Reporter& reporter,
                                      const CancelToken& cancel) {
  DF11_ASSIGN_OR_RETURN(ModelFolder folder, open_model_path(options.path, cancel));
  InspectReport report;
  report.path = options.path;
  report.dtypes = dtype_shares(folder);
  if (is_df11_checkpoint(folder)) {
    if (options.zstd) {
      reporter.note(
          "--baseline zstd applies to BF16 checkpoints; run it on the original (or on the "
          "output of df11 decompress)");
    }
    describe_files(folder, report);
    if (options.headers_only) {
      std::vector<const SafetensorsHeader*> headers;
      for (const SafetensorsFile& shard : folder.shards) headers.push_back(&shard.header());
      DF11_RETURN_IF_ERROR(describe_df11_checkpoint(headers, folder.shard_names, folder.config_text,
                                                    folder.dir.string(), report));
    } else {
      DF11_RETURN_IF_ERROR(analyze_df11_checkpoint(folder, report, cancel));
    }
  } else {
    report.kind = CheckpointKind::kBf16;
    DF11_RETURN_IF_ERROR(predict_bf16_checkpoint(folder, options.zstd, report, cancel));
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
