#include "hub_pipeline.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "byte_units.h"
#include "model_card.h"
#include "verify.h"

namespace df11::app {
namespace {

namespace fs = std::filesystem;

// Transfer controls that feed the reporter's progress and stop with the cancel token.
struct ReportedTransfer {
  ReportedTransfer(Reporter& reporter, const CancelToken& cancel, const std::string& label,
                   int transfers) {
    control.threads = transfers > 0 ? transfers : 8;
    control.cancelled = [&cancel] { return cancel.cancelled(); };
    control.progress = [this, &reporter, label](const hub::TransferProgress& p) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!started) {
        reporter.progress_start(label, p.bytes_total);
        started = true;
      }
      if (p.bytes_done > reported) {
        reporter.progress_advance(p.bytes_done - reported);
        reported = p.bytes_done;
      }
    };
  }
  hub::TransferControl control;
  std::mutex mutex;
  bool started = false;
  uint64_t reported = 0;
};

// Runs one df11_hub operation with the reporter's progress; an interruption is reported with
// the token's reason ("interrupted by SIGINT").
template <typename T, typename Op>
Result<T> with_reporter(Reporter& reporter, const CancelToken& cancel, const std::string& label,
                        int transfers, Op op) {
  ReportedTransfer transfer(reporter, cancel, label, transfers);
  Result<T> result = op(transfer.control);
  reporter.progress_finish();
  if (!result && result.status().code() == ErrorCode::kInterrupted) {
    Status interrupted = cancel.check();
    if (!interrupted.is_ok()) return interrupted;
  }
  return result;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The source named in config.json ("_name_or_path"), when it is a Hub id.
std::optional<std::string> base_model_from_config(const std::string& config_json) {
  const nlohmann::json j = nlohmann::json::parse(config_json, nullptr, false);
  if (!j.is_object() || !j.contains("_name_or_path") || !j["_name_or_path"].is_string()) {
    return std::nullopt;
  }
  const std::string name = j["_name_or_path"].get<std::string>();
  auto ref = hub::parse_repo_ref(name);
  if (!ref || name.find('@') != std::string::npos) return std::nullopt;
  return name;
}

// Verifies the folder and returns the SHA-256 of its files that the verify pass computed on
// the way (push needs them as LFS object ids: no second read of the shards).
Result<std::map<std::string, hub::PushOptions::KnownDigest>> verify_for_push(
    const std::string& folder, int threads, Reporter& reporter, const CancelToken& cancel) {
  VerifyOptions verify;
  verify.df11_dir = folder;
  verify.device = DeviceChoice::kCpu;
  verify.threads = threads;
  verify.folder_sha256 = true;
  DF11_ASSIGN_OR_RETURN(VerifyReport report, verify_model(verify, reporter, cancel));
  if (!report.has_checksums) {
    return Status(ErrorCode::kBadMetadata,
                  folder + ": not a DF11 folder written by df11 (no df11 checksums): refusing to push");
  }
  if (!report.ok()) {
    return Status(ErrorCode::kMismatch, folder + ": df11 verify failed (" +
                                            std::to_string(report.failures.size()) +
                                            " problems listed above): refusing to push");
  }
  reporter.note("verified " + folder + ": " + std::to_string(report.groups) + " groups decoded, " +
                std::to_string(report.tensors) + " tensors and " + std::to_string(report.files) +
                " files checked");
  std::map<std::string, hub::PushOptions::KnownDigest> digests;
  for (const FolderFile& f : report.folder_digests) digests[f.file] = {f.size, f.sha256};
  return digests;
}

}  // namespace

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

Result<PushModelResult> push_model(const PushModelOptions& options, Reporter& reporter,
                                   const CancelToken& cancel) {
  DF11_ASSIGN_OR_RETURN(hub::RepoRef ref, hub::parse_repo_ref(options.repo));
  if (options.repo.find('@') != std::string::npos) {
    return Status(ErrorCode::kInvalidArgument, options.repo + ": give the branch with --revision");
  }
  ref.revision = options.revision;
  DF11_ASSIGN_OR_RETURN(hub::HubConfig config, hub::config_from_environment());
  if (!config.token) {
    return Status(ErrorCode::kInvalidArgument,
                  "push needs a Hub token with write access: set HF_TOKEN or write HF_HOME/token");
  }
  PushModelResult result;
  const auto verify_start = std::chrono::steady_clock::now();
  DF11_ASSIGN_OR_RETURN(auto digests,
                        verify_for_push(options.folder, options.threads, reporter, cancel));
  result.verify_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - verify_start).count();
  const fs::path readme = fs::path(options.folder) / "README.md";
  std::error_code ec;
  if (!fs::exists(readme, ec)) {
    ModelCardInput card;
    card.repo_id = ref.repo_id;
    card.config_json = read_text(fs::path(options.folder) / "config.json");
    card.base_model = options.base_model ? options.base_model : base_model_from_config(card.config_json);
    DF11_RETURN_IF_ERROR(fill_card_sizes(options.folder, card, cancel));
    const std::string text = make_model_card(card);
    const fs::path tmp = fs::path(options.folder) / "README.md.df11-tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out << text;
      if (!out.flush()) return Status(ErrorCode::kIo, tmp.string() + ": write failed");
    }
    fs::rename(tmp, readme, ec);
    if (ec) return Status(ErrorCode::kIo, readme.string() + ": " + ec.message());
    result.wrote_card = true;
    reporter.note("wrote the model card " + readme.string());
  }
  hub::PushOptions push;
  push.ref = ref;
  push.folder = options.folder;
  push.private_repo = options.private_repo;
  push.create_pr = options.create_pr;
  push.commit_message = options.message;
  push.known_sha256 = std::move(digests);
  DF11_ASSIGN_OR_RETURN(result.push,
                        with_reporter<hub::PushResult>(
                            reporter, cancel, "push " + ref.repo_id, options.transfers,
                            [&](const hub::TransferControl& control) {
                              return hub::push_folder(config, push, control);
                            }));
  return result;
}

Result<PublishResult> publish_model(const PublishOptions& options, Reporter& reporter,
                                    const CancelToken& cancel) {
  DF11_ASSIGN_OR_RETURN(hub::RepoRef source, hub::parse_repo_ref(options.source));
  DF11_ASSIGN_OR_RETURN(hub::RepoRef target, hub::parse_repo_ref(options.target));
  PublishResult result;
  result.df11_dir = options.work_dir.empty() ? target.repo_id.substr(target.repo_id.find('/') + 1)
                                             : options.work_dir;
  PullModelOptions pull;
  pull.repo = options.source;
  pull.transfers = options.transfers;
  DF11_ASSIGN_OR_RETURN(result.pull, pull_model(pull, reporter, cancel));
  reporter.note("pulled " + source.repo_id + " -> " + result.pull.snapshot_dir);

  std::error_code ec;
  if (fs::exists(result.df11_dir, ec)) {
    // An earlier run compressed it (compress output is atomic: an existing folder is whole);
    // verify_for_push below decides whether it can be used.
    reporter.note("reusing " + result.df11_dir + " from an earlier run");
  } else {
    CompressOptions compress;
    compress.model_dir = result.pull.snapshot_dir;
    compress.out_dir = result.df11_dir;
    compress.group_by = options.group_by;
    compress.threads = options.threads;
    DF11_ASSIGN_OR_RETURN(CompressSummary summary, compress_model(compress, reporter, cancel));
    reporter.note("compressed into " + result.df11_dir + ": " + format_bytes(summary.input_bytes) +
                  " -> " + format_bytes(summary.output_bytes));
    result.compressed = true;
  }
  PushModelOptions push;
  push.folder = result.df11_dir;
  push.repo = target.repo_id;
  push.revision = target.revision;
  push.private_repo = options.private_repo;
  push.create_pr = options.create_pr;
  push.base_model = source.repo_id;
  push.message = "Upload " + source.repo_id + " in DF11 (df11 publish)";
  push.threads = options.threads;
  push.transfers = options.transfers;
  DF11_ASSIGN_OR_RETURN(result.push, push_model(push, reporter, cancel));
  return result;
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
