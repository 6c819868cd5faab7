// Diffusers pipeline folders: model_index.json at the top and one subfolder per component
// (transformer/, unet/, text_encoder/, text_encoder_2/, vae/, tokenizer/, scheduler/).
// compress codes every component that holds BF16 weights (a checkpoint folder of its own:
// config.json and *.safetensors) with compress_model and copies everything else; decompress
// restores the coded components and copies the rest, so that the pipeline comes back byte
// for byte; verify checks every coded component (against the original's same-named
// component with --against) and compares every other file with the original's.
// The whole output is staged and renamed into place as one folder (output_dir.h).
// (Named diffusers_* because pipeline/ already means df11's command library; the CLI's
// output still says "pipeline", the diffusers term.)
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "df11/cancel.h"
#include "df11/compress.h"
#include "df11/decompress.h"
#include "df11/inspect_model.h"
#include "df11/reporter.h"
#include "df11/status.h"
#include "df11/verify.h"

namespace df11::app {

inline constexpr const char* kModelIndexFile = "model_index.json";

// True for a folder with model_index.json and no top-level *.safetensors.
bool is_diffusers_folder(const std::filesystem::path& dir);

struct DiffusersCompressSummary {
  std::vector<std::string> coded;          // components compressed, in name order
  std::vector<CompressSummary> summaries;  // one per coded component
  size_t copied_files = 0;                 // every other file
  uint64_t copied_bytes = 0;
  double seconds = 0;
};

// options.model_dir is the pipeline folder; the component options are derived from it.
Result<DiffusersCompressSummary> compress_diffusers(const CompressOptions& options,
                                                    Reporter& reporter, const CancelToken& cancel);

struct DiffusersDecompressSummary {
  std::vector<std::string> restored;  // coded components, in name order
  std::vector<DecompressSummary> summaries;
  size_t copied_files = 0;
  double seconds = 0;
};
Result<DiffusersDecompressSummary> decompress_diffusers(const DecompressOptions& options,
                                                        Reporter& reporter,
                                                        const CancelToken& cancel);

// One VerifyReport for the pipeline: the components' reports summed, failures prefixed with
// the component, plus a failure per copied file that differs from (or is missing in) the
// --against pipeline.
// Failures are also reported as findings as they are found.
Result<VerifyReport> verify_diffusers(const VerifyOptions& options, Reporter& reporter,
                                      const CancelToken& cancel);

// inspect of a pipeline: one report per component that holds weights (a subfolder that opens
// as a checkpoint: BF16, DF11 or other dtypes), in name order; `other` names the rest.
struct DiffusersInspectReport {
  std::vector<std::string> components;
  std::vector<InspectReport> reports;  // one per component
  std::vector<std::string> other;      // entries without weights (tokenizer, scheduler, ...)
};
// options.path is the pipeline folder.
Result<DiffusersInspectReport> inspect_diffusers(const InspectOptions& options, Reporter& reporter,
                                                 const CancelToken& cancel);

}  // namespace df11::app
