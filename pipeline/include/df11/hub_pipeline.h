// The Hub pipelines behind `df11 pull`, `push` and `publish`, and Hub ids where a folder is
// expected. Transfers go through df11_hub; this layer adds the checks (verify before push),
// the model card, and the publish sequence. Reports through a Reporter (progress bars, notes),
// stops through a CancelToken (kInterrupted).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "df11/cancel.h"
#include "df11/compress.h"
#include "df11/hub/hub.h"
#include "df11/reporter.h"

namespace df11::app {

struct PullModelOptions {
  std::string repo;  // "org/name[@rev]"
  std::optional<std::string> local_dir;
  std::vector<std::string> include;
  int transfers = 8;  // parallel downloads (network-bound: not limited by the cores)
};
Result<hub::PullResult> pull_model(const PullModelOptions& options, Reporter& reporter,
                                   const CancelToken& cancel);

struct PushModelOptions {
  std::string folder;
  std::string repo;  // "org/name"
  std::string revision = "main";
  bool private_repo = false;
  bool create_pr = false;
  std::optional<std::string> base_model;  // for the card; else config.json's _name_or_path
  std::string message = "Upload DF11 model with df11";
  int threads = 0;    // CPU threads of the verify pass (0: all cores)
  int transfers = 8;  // parallel uploads (network-bound: not limited by the cores)
};
struct PushModelResult {
  hub::PushResult push;
  bool wrote_card = false;
  double verify_seconds = 0;
};
// Refuses (kMismatch or the verify error) a folder that does not pass `df11 verify`; writes
// README.md when missing; then uploads.
Result<PushModelResult> push_model(const PushModelOptions& options, Reporter& reporter,
                                   const CancelToken& cancel);

struct PublishOptions {
  std::string source;    // BF16 repo "org/name[@rev]"
  std::string target;    // "me/name-DF11"
  std::string work_dir;  // the DF11 folder (default: the target's name)
  bool private_repo = false;
  bool create_pr = false;
  GroupBy group_by = GroupBy::kBlock;
  int threads = 0;             // CPU threads of compress and verify (0: all cores)
  int transfers = 8;           // parallel Hub transfers
  bool source_sha256 = false;  // CompressOptions::source_sha256 (--source-sha256)
};
struct PublishResult {
  hub::PullResult pull;
  bool compressed = false;  // false: an earlier run's verified folder was reused
  std::string df11_dir;
  PushModelResult push;
};
// pull -> compress -> verify -> push. Every step is resumable: the pull skips what the cache
// has, an existing verified DF11 folder is not compressed again, the push skips stored objects.
Result<PublishResult> publish_model(const PublishOptions& options, Reporter& reporter,
                                    const CancelToken& cancel);

// A command's model argument: an existing path is returned as it is; otherwise a Hub id
// ("org/name[@rev]") is pulled into the cache and its snapshot folder returned.
Result<std::string> resolve_model_argument(const std::string& argument, int transfers,
                                           Reporter& reporter, const CancelToken& cancel);

}  // namespace df11::app
