// df11 verify: proves a DF11 folder decodes to what it claims. Every group is validated and
// decoded in full; with df11 metadata, every stored tensor's xxh3, every original tensor's
// xxh3, every original file's SHA-256, every shard header's checksum and (metadata 1.1)
// every other file of the folder against the folder record are checked, and pattern_dict is
// checked to make the dfloat11 loader decode each group into the right weights. With --against,
// every tensor is compared bit for bit with the original folder. Folders without df11 metadata
// (published by the dfloat11 tools) get structural validation and a full decode with the
// strict reference decoder; checksums are unavailable for them.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "df11/cancel.h"
#include "df11/metadata.h"
#include "df11/reporter.h"
#include "df11/status.h"

namespace df11::app {

enum class DeviceChoice { kCpu, kCuda, kAuto };

struct VerifyOptions {
  std::filesystem::path df11_dir;
  std::optional<std::filesystem::path> against;
  DeviceChoice device = DeviceChoice::kAuto;
  int threads = 0;
  size_t parallel_files = 0;  // original files rebuilt side by side; 0: from the thread count
  bool file_sha256 = false;   // also hash every rebuilt original file (--sha256)
  // Also the SHA-256 of the DF11 folder's own files, from the reads verify makes anyway: each
  // shard is read once in file order for its stored checksums and its SHA-256 together, and
  // every recorded side file is hashed by the folder-record check. For push (LFS object ids).
  // Folders written by df11 only (VerifyReport::folder_digests stays empty otherwise).
  bool folder_sha256 = false;
  // With folder_sha256: called with each digest as soon as it is computed (from worker
  // threads), then once with nullptr when every digest verify will compute is out, before
  // its decode pass (push uploads each file while the rest is verified). May be empty.
  std::function<void(const FolderFile*)> on_folder_digest;
};

// One thing verification found wrong: where, as far as the check knows it (empty fields
// otherwise), what kind of problem (`code`: corrupt_data, bad_metadata, mismatch, ...) and
// the line printed for it, which names the location first.
struct Finding {
  std::string file;    // a file of the DF11 folder (or of the original, for a rebuilt file)
  std::string group;   // the coded group (module path)
  std::string tensor;  // an original tensor, or a stored tensor of a group
  ErrorCode code = ErrorCode::kCorruptData;
  std::string message;
};

// A Finding for `message`, its location read from the way df11's messages name it first:
// "FILE: group 'G': member 'T': ...", "FILE: group 'G': ...", "FILE: tensor 'T': ...",
// "tensor 'T' (FILE: group 'G'): ...", "tensor 'T' of DIR ...", "FILE: ..." (a path
// without spaces).
Finding make_finding(ErrorCode code, std::string message);

struct VerifyReport {
  bool has_checksums = true;               // false for folders without df11 metadata
  std::string device;                      // "cpu" or "cuda"
  size_t groups = 0;                       // groups decoded
  size_t tensors = 0;                      // original tensors checked
  size_t files = 0;                        // original files rebuilt and checked
  bool files_sha256 = false;               // ... including their recorded SHA-256
  size_t side_files = 0;                   // recorded side files checked
  size_t headers = 0;                      // shard headers whose whole-header checksum matched
  size_t folder_files = 0;                 // files of the folder matching the folder record
  size_t compared = 0;                     // tensors compared with --against
  size_t aliases = 0;                      // tied copies decoded equal to the tensor they copy
  std::vector<FolderFile> folder_digests;  // VerifyOptions::folder_sha256: shards, recorded files
  std::vector<Finding> failures;           // one each, naming the tensor or file
  // --against a folder whose tensors mostly differ in name, dtype or shape: one line saying
  // the two folders hold different models (empty otherwise).
  std::string different_models;
  std::vector<std::string> notes;         // what the user should know about the checks
  std::vector<std::string> device_notes;  // which decoder ran and why (CUDA absent, ...)
  bool ok() const { return failures.empty(); }
};

// The report is returned even when checks fail (report.ok() false); an error Status means
// verification could not run (unreadable folder, I/O, interrupted, no CUDA device).
// Failures are also reported as findings on `reporter` as they are found ("FAIL ...").
Result<VerifyReport> verify_model(const VerifyOptions& options, Reporter& reporter,
                                  const CancelToken& cancel);

}  // namespace df11::app
