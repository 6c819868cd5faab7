#include "inspect.h"

#include <filesystem>
#include <new>
#include <system_error>
#include <utility>

#include "exit_codes.h"
#include "inspect_bf16.h"
#include "inspect_df11.h"
#include "inspect_render.h"
#include "inspect_report.h"
#include "model_folder.h"
#include "thread_limit.h"

namespace df11::app {
namespace {

namespace fs = std::filesystem;

constexpr const char* kZstdBaseline = "zstd";

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

Result<InspectReport> inspect(const InspectOptions& options, bool zstd, std::ostream& err) {
  std::error_code ec;
  const fs::path path(options.path);
  Result<ModelFolder> folder =
      fs::is_directory(path, ec) ? open_model_folder(path) : open_single_file(path);
  if (!folder) return folder.status();
  InspectReport report;
  report.path = options.path;
  if (is_df11_checkpoint(*folder)) {
    if (zstd) {
      err << "note: --baseline zstd applies to BF16 checkpoints; run it on the original (or "
             "on the output of df11 decompress)\n";
    }
    describe_files(*folder, report);
    DF11_RETURN_IF_ERROR(analyze_df11_checkpoint(*folder, report));
  } else {
    report.kind = CheckpointKind::kBf16;
    DF11_RETURN_IF_ERROR(predict_bf16_checkpoint(*folder, zstd, report));
  }
  return report;
}

}  // namespace

int run_inspect(const InspectOptions& options, std::ostream& out, std::ostream& err) {
  bool zstd = false;
  for (const std::string& b : options.baselines) {
    if (b != kZstdBaseline) {
      err << "error: unknown --baseline '" << b << "' (known: zstd)\n";
      return kExitUsage;
    }
    zstd = true;
  }
  if (options.path.empty()) {
    err << "error: inspect needs a PATH (a model folder or a .safetensors file)\n";
    return kExitUsage;
  }
  try {
    Result<InspectReport> report =
        run_with_thread_limit(options.threads, [&] { return inspect(options, zstd, err); });
    if (!report) {
      err << "error: " << report.status().to_string() << "\n";
      return exit_code_for(report.status());
    }
    if (options.json) {
      render_inspect_json(*report, out);
    } else {
      render_inspect_text(*report, options.verbosity, out);
    }
    out.flush();
    if (!out) {
      err << "error: cannot write the report (standard output closed or full)\n";
      return kExitOtherError;
    }
    return kExitOk;
  } catch (const std::bad_alloc&) {
    err << "error: resource_limit: out of memory\n";
    return kExitOtherError;
  } catch (const std::exception& e) {
    err << "error: internal: " << e.what() << "\n";
    return kExitOtherError;
  }
}

}  // namespace df11::app
