// The two kinds of folder verify handles (verify.h): written by df11 (with df11 metadata:
// checksums available) and published by the dfloat11 tools (none: structure + full decode).
#pragma once

#include <mutex>
#include <string>

#include "df11/model_folder.h"
#include "df11/reporter.h"
#include "df11/verify.h"
#include "rebuild.h"
#include "tensor_compare.h"

namespace df11::app {

struct VerifyContext {
  VerifyContext(Reporter& rep, const CancelToken& c, VerifyReport& r, const ModelFolder* a,
                DecodeDevice d, size_t files, bool sha256, bool folder_digests = false)
      : reporter(rep),
        cancel(c),
        report(r),
        against(a),
        device(d),
        parallel_files(files),
        file_sha256(sha256),
        folder_sha256(folder_digests) {}

  Reporter& reporter;
  const CancelToken& cancel;
  VerifyReport& report;
  const ModelFolder* against = nullptr;  // --against, or null
  std::string here;                      // the folder verified, as the user named it
  DecodeDevice device = DecodeDevice::kCpu;
  size_t parallel_files = 0;   // files rebuilt side by side; 0 = source_parallelism()
  bool file_sha256 = false;    // hash rebuilt original files too (RebuildOptions)
  bool folder_sha256 = false;  // VerifyOptions::folder_sha256
  std::function<void(const FolderFile*)> on_folder_digest;  // VerifyOptions::on_folder_digest

  // Records a folder digest (folder_sha256) and hands it on. Thread-safe.
  void add_folder_digest(FolderFile file) {
    if (on_folder_digest) on_folder_digest(&file);
    std::lock_guard<std::mutex> lock(mutex);
    report.folder_digests.push_back(std::move(file));
  }

  std::mutex mutex;  // guards report (workers rebuild several files at once)

  // Records and prints a finding; `line` names the tensor or file first. Thread-safe.
  void fail(ErrorCode code, const std::string& line) {
    reporter.finding("FAIL " + line);
    std::lock_guard<std::mutex> lock(mutex);
    report.failures.push_back(make_finding(code, line));
  }
  void fail(const Status& status) { fail(status.code(), status.message()); }

  // Reports each tensor of the --against folder that `comparer` (with what was merged into
  // it) never saw: missing from the DF11 folder.
  void fail_not_compared(const TensorComparer& comparer) {
    for (const std::string& name : comparer.not_compared()) {
      fail(ErrorCode::kMismatch, "tensor '" + name + "' of " + against->dir.string() +
                                     " is missing from the DF11 folder");
    }
  }
};

Status verify_df11_folder(ModelFolder model, VerifyContext& context);
Status verify_published_folder(const ModelFolder& model, VerifyContext& context);

}  // namespace df11::app
