// `df11 pull` and Hub ids where a folder is expected (hub_pipeline.h), apart from push and
// publish so that a program that only pulls (the tools C API) links the Hub client alone, not
// verify, the model card and inspect.
#include <filesystem>

#include "df11/hub_pipeline.h"
#include "hub_transfer.h"

namespace df11::app {
namespace fs = std::filesystem;

Result<hub::PullResult> pull_model(const PullModelOptions& options, Reporter& reporter,
                                   const CancelToken& cancel) {
  DF11_ASSIGN_OR_RETURN(hub::RepoRef ref, hub::parse_repo_ref(options.repo));
  DF11_ASSIGN_OR_RETURN(hub::HubConfig config, hub::config_from_environment());
  hub::PullOptions pull;
  pull.ref = ref;
  pull.local_dir = options.local_dir;
  pull.include = options.include;
  return with_reporter<hub::PullResult>(
      reporter, cancel, "pull " + ref.repo_id, options.transfers,
      [&](const hub::TransferControl& control) { return hub::pull(config, pull, control); });
}

Result<std::string> resolve_model_argument(const std::string& argument, int transfers,
                                           Reporter& reporter, const CancelToken& cancel) {
  std::error_code ec;
  if (fs::exists(argument, ec) || !hub::looks_like_repo_ref(argument)) return argument;
  PullModelOptions pull;
  pull.repo = argument;
  pull.transfers = transfers;
  DF11_ASSIGN_OR_RETURN(hub::PullResult pulled, pull_model(pull, reporter, cancel));
  reporter.detail("pulled " + argument + " -> " + pulled.snapshot_dir);
  return pulled.snapshot_dir;
}

}  // namespace df11::app
