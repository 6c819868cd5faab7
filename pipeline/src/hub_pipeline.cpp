#include "df11/hub_pipeline.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "df11/byte_units.h"
#include "df11/count_text.h"
#include "df11/df11_folder.h"
#include "df11/model_folder.h"
#include "df11/verify.h"
#include "hub_transfer.h"
#include "model_card.h"

namespace df11::app {
namespace {

namespace fs = std::filesystem;

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

// One request at a time, stopped by `cancel`, retries announced as notes: the checks and
// calls around the transfers.
hub::TransferControl setup_control(const CancelToken& cancel, Reporter& reporter) {
  hub::TransferControl setup;
  setup.threads = 1;
  setup.cancelled = [&cancel] { return cancel.cancelled(); };
  setup.on_retry = [&reporter](const std::string& line) { reporter.note(line); };
  return setup;
}

// Refuses, before anything is created on the Hub, a folder df11 did not write: without df11's
// checksums verify could only check structure, not that the bytes are the model's.
Status require_df11_folder(const std::string& folder, const CancelToken& cancel) {
  DF11_ASSIGN_OR_RETURN(ModelFolder model, open_model_folder(folder, cancel));
  if (!written_by_df11(model)) {
    return Status(
        ErrorCode::kBadMetadata,
        folder + ": not a DF11 folder written by df11 (no df11 checksums): refusing to push");
  }
  return Status::ok();
}

// Passes a verify pass's lines on and drops its progress (the upload beside it owns the bar);
// remembers that a finding was made, which stops the upload.
class BesideReporter final : public Reporter {
 public:
  explicit BesideReporter(Reporter& out) : out_(out) {}
  void note(const std::string& line) override { out_.note(line); }
  void detail(const std::string& line) override { out_.detail(line); }
  void finding(const std::string& line) override {
    failed_.store(true);
    out_.finding(line);
  }
  void warning(const std::string& line) override { out_.warning(line); }
  int verbosity() const override { return out_.verbosity(); }
  bool failed() const { return failed_.load(); }

 private:
  Reporter& out_;
  std::atomic<bool> failed_{false};
};

// `df11 verify` of the folder on its own thread, beside the upload: it hands push each file's
// SHA-256 as soon as its first pass (every shard read once, in parallel) has it, so uploads
// start while the decode pass still runs; push commits only after verdict() is OK.
class VerifyBesidePush {
 public:
  VerifyBesidePush(const std::string& folder, int threads, Reporter& reporter,
                   const CancelToken& cancel)
      : reporter_(reporter), stop_(&cancel) {
    VerifyOptions verify;
    verify.df11_dir = folder;
    verify.device = DeviceChoice::kCpu;
    verify.threads = threads;
    verify.folder_sha256 = true;
    verify.on_folder_digest = [this](const FolderFile* f) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (f == nullptr) {
        digests_done_ = true;
      } else {
        digests_[f->file] = *f;
      }
      changed_.notify_all();
    };
    const auto start = std::chrono::steady_clock::now();
    thread_ = std::thread([this, verify, start] {
      Result<VerifyReport> report = verify_model(verify, reporter_, stop_);
      std::lock_guard<std::mutex> lock(mutex_);
      report_ = std::move(report);
      seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      finished_ = true;
      changed_.notify_all();
    });
  }
  ~VerifyBesidePush() { stop(); }

  // Stops the pass early (the upload failed) and waits for it.
  void stop() {
    stop_.cancel("the push stopping");
    if (thread_.joinable()) thread_.join();
  }

  // True once the pass has found a problem or could not run for a reason other than being
  // stopped: the upload can stop, and the folder is refused.
  bool refused() {
    if (reporter_.failed()) return true;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!finished_) return false;
    if (!report_) return report_.status().code() != ErrorCode::kInterrupted;
    return !report_->ok() || !report_->has_checksums;
  }

  std::optional<std::string> sha256(const std::string& path) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return digests_.count(path) != 0 || digests_done_ || finished_; });
    const auto it = digests_.find(path);
    if (it == digests_.end()) return std::nullopt;
    return it->second.sha256;
  }

  // Waits for the pass; OK only if it ran and found nothing.
  Status verdict(const std::string& folder) {
    if (thread_.joinable()) thread_.join();
    if (!report_) return report_.status();
    const VerifyReport& report = *report_;
    if (!report.has_checksums) {
      return Status(
          ErrorCode::kBadMetadata,
          folder + ": not a DF11 folder written by df11 (no df11 checksums): refusing to push");
    }
    if (!report.ok()) {
      return Status(ErrorCode::kMismatch, folder + ": df11 verify failed (" +
                                              count_of(report.failures.size(), "problem") +
                                              " listed above): refusing to push");
    }
    return Status::ok();
  }

  const VerifyReport& report() const { return *report_; }
  double seconds() const { return seconds_; }

 private:
  BesideReporter reporter_;
  CancelToken stop_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, FolderFile> digests_;
  bool digests_done_ = false;
  bool finished_ = false;
  Result<VerifyReport> report_ = Status(ErrorCode::kInterrupted, "verify did not run");
  double seconds_ = 0;
  std::thread thread_;  // last: started once everything it uses exists
};

// Writes `text` as the folder's README.md (write to a temporary name, then rename).
Status write_card(const std::string& folder, const std::string& text) {
  const fs::path readme = fs::path(folder) / "README.md";
  const fs::path tmp = fs::path(folder) / "README.md.df11-tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) {
      out.close();
      std::error_code ignored;
      fs::remove(tmp, ignored);
      return Status(ErrorCode::kIo, tmp.string() + ": write failed");
    }
  }
  std::error_code ec;
  fs::rename(tmp, readme, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return Status(ErrorCode::kIo, readme.string() + ": " + ec.message());
  }
  return Status::ok();
}

}  // namespace

Result<PushModelResult> push_model(const PushModelOptions& options, Reporter& reporter,
                                   const CancelToken& cancel) {
  DF11_ASSIGN_OR_RETURN(hub::RepoRef ref, hub::parse_repo_ref(options.repo));
  if (options.repo.find('@') != std::string::npos) {
    return Status(ErrorCode::kInvalidArgument, options.repo + ": give the branch with --revision");
  }
  ref.revision = options.revision;
  DF11_ASSIGN_OR_RETURN(hub::HubConfig config, hub::config_from_environment());
  DF11_RETURN_IF_ERROR(require_df11_folder(options.folder, cancel));
  const hub::TransferControl setup = setup_control(cancel, reporter);
  // The token, the namespace and the revision are checked before anything is created.
  DF11_ASSIGN_OR_RETURN(hub::PushTarget target, hub::check_push_target(config, ref, setup));
  PushModelResult result;
  hub::PushOptions push;
  push.ref = ref;
  push.folder = options.folder;
  push.private_repo = options.private_repo;
  push.create_pr = options.create_pr;
  push.commit_message = options.message;
  push.repo_ready = true;

  // The model card, when the folder has none: uploaded from memory, and written into the
  // folder only once the push has succeeded (a refused push leaves the folder as it was).
  std::optional<std::string> card_text;
  std::error_code ec;
  if (!fs::exists(fs::path(options.folder) / "README.md", ec)) {
    ModelCardInput card;
    card.repo_id = ref.repo_id;
    card.config_json = read_text(fs::path(options.folder) / "config.json");
    card.base_model =
        options.base_model ? options.base_model : base_model_from_config(card.config_json);
    DF11_RETURN_IF_ERROR(fill_card_sizes(options.folder, card, cancel));
    card_text = make_model_card(card);
    push.extra_files.push_back({"README.md", *card_text});
  }

  bool created = false;
  bool committed = false;
  push.on_commit = [&committed](const std::string&) { committed = true; };
  if (!target.exists) {
    DF11_ASSIGN_OR_RETURN(created,
                          hub::prepare_repo(config, ref.repo_id, options.private_repo, setup));
  }
  // A repository this push created goes again when the push fails before committing
  // anything (an interrupted push keeps it: the next push resumes from its stored objects).
  const auto drop_created = [&] {
    if (!created || committed) return;
    hub::TransferControl cleanup;  // not stopped by the signal that may have caused this
    cleanup.threads = 1;
    if (Status deleted = hub::delete_created_repo(config, ref.repo_id, cleanup); !deleted) {
      reporter.warning("could not delete the repository " + ref.repo_id +
                       " this push created: " + deleted.message());
    }
  };
  if (target.listing) {
    push.remote = std::move(target.listing);
  } else {
    Result<hub::RemoteListing> listing = hub::list_repo(config, ref, setup);
    if (!listing) {
      if (listing.status().code() != ErrorCode::kInterrupted) drop_created();
      return listing.status();
    }
    push.remote = std::move(listing).value();
  }

  // Verify runs beside the upload; the commit waits for its verdict, and a finding stops
  // the uploads at once.
  VerifyBesidePush verify(options.folder, options.threads, reporter, cancel);
  reporter.note("verifying " + options.folder +
                " while uploading: nothing is committed before it passes");
  push.gate =
      hub::PushOptions::Gate{[&verify](const std::string& path) { return verify.sha256(path); },
                             [&verify, &options] { return verify.verdict(options.folder); }};
  const auto transfer_cancelled = [&] { return cancel.cancelled() || verify.refused(); };
  ReportedTransfer transfer(reporter, cancel, "push " + ref.repo_id, options.transfers);
  transfer.control.cancelled = transfer_cancelled;
  Result<hub::PushResult> pushed = hub::push_folder(config, push, transfer.control);
  reporter.progress_finish();
  if (!pushed) {
    if (!verify.refused()) {
      verify.stop();
      if (pushed.status().code() == ErrorCode::kInterrupted) {
        DF11_RETURN_IF_ERROR(cancel.check());
      } else {
        drop_created();
      }
      return pushed.status();
    }
    // The folder failed verification: a repository this push created goes again, so that a
    // refused folder leaves nothing on the Hub.
    Status refusal = verify.verdict(options.folder);
    if (refusal.is_ok()) refusal = pushed.status();
    drop_created();
    return refusal;
  }
  result.push = std::move(*pushed);
  result.verify_seconds = verify.seconds();
  const VerifyReport& report = verify.report();
  reporter.note("verified " + options.folder + ": " + count_of(report.groups, "group") +
                " decoded, " + count_of(report.tensors, "tensor") + " and " +
                count_of(report.files, "file") + " checked");
  if (card_text) {
    DF11_RETURN_IF_ERROR(write_card(options.folder, *card_text));
    result.wrote_card = true;
    reporter.note("wrote the model card " + (fs::path(options.folder) / "README.md").string());
  }
  return result;
}

Result<PublishResult> publish_model(const PublishOptions& options, Reporter& reporter,
                                    const CancelToken& cancel) {
  DF11_ASSIGN_OR_RETURN(hub::RepoRef source, hub::parse_repo_ref(options.source));
  DF11_ASSIGN_OR_RETURN(hub::RepoRef target, hub::parse_repo_ref(options.target));
  {
    // Whether the push at the end can succeed is checked before the pull and the compression:
    // the token (present, valid, able to write the target's namespace) and the revision.
    DF11_ASSIGN_OR_RETURN(hub::HubConfig config, hub::config_from_environment());
    DF11_RETURN_IF_ERROR(
        hub::check_push_target(config, target, setup_control(cancel, reporter)).status());
  }
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
    compress.source_sha256 = options.source_sha256;
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

}  // namespace df11::app
