#include "hub_commands.h"

#include <nlohmann/json.hpp>

#include "df11/byte_units.h"
#include "df11/count_text.h"
#include "exit_codes.h"
#include "signals.h"
#include "summary_text.h"

namespace df11::app {
namespace {

using Json = nlohmann::ordered_json;

// The result documents; the command's own document adds "command" and "ok" first.
Json pull_json(const std::string& repo, const hub::PullResult& r) {
  return Json{{"repo", repo},
              {"commit", r.commit},
              {"path", r.snapshot_dir},
              {"files", r.files_total},
              {"files_downloaded", r.files_downloaded},
              {"files_reused", r.files_reused},
              {"bytes_total", r.bytes_total},
              {"bytes_downloaded", r.bytes_downloaded}};
}

Json push_json(const std::string& repo, const PushModelResult& r) {
  return Json{{"repo", repo},
              {"commit", r.push.commit_oid},
              {"commit_url", r.push.commit_url},
              {"pr_url", r.push.pr_url.empty() ? Json(nullptr) : Json(r.push.pr_url)},
              {"files", r.push.files},
              {"commits", r.push.commits},
              {"lfs_uploaded", r.push.lfs_uploaded},
              {"lfs_already_stored", r.push.lfs_already_stored},
              {"bytes_uploaded", r.push.bytes_uploaded},
              {"files_hashed", r.push.files_hashed},
              {"files_committed", r.push.files_committed},
              {"deleted", r.push.deleted},
              {"up_to_date", r.push.up_to_date},
              {"wrote_model_card", r.wrote_card},
              {"seconds",
               {{"verify", r.verify_seconds},
                {"transfer", r.push.transfer_seconds},
                {"waiting_for_verify", r.push.gate_wait_seconds}}}};
}

std::string push_line(const std::string& repo, const std::string& folder,
                      const PushModelResult& r) {
  if (r.push.up_to_date) {
    return repo + " is up to date with " + folder + ": nothing to commit (head " +
           r.push.commit_oid + ")";
  }
  std::string line = "pushed " + count_of(r.push.files, "file") + " to " + repo + " (" +
                     std::to_string(r.push.lfs_uploaded) + " LFS objects sent, " +
                     format_bytes(r.push.bytes_uploaded) + "; " +
                     std::to_string(r.push.lfs_already_stored) + " already stored) in " +
                     std::to_string(r.push.commits) + " commit" + (r.push.commits == 1 ? "" : "s") +
                     ": " + r.push.commit_url;
  if (!r.push.pr_url.empty()) line += " (pull request " + r.push.pr_url + ")";
  if (!r.push.deleted.empty()) {
    line += "\ndeleted " + std::to_string(r.push.deleted.size()) +
            " remote files the folder does not have: ";
    for (size_t i = 0; i < r.push.deleted.size(); ++i) {
      line += (i == 0 ? "" : ", ") + r.push.deleted[i];
    }
  }
  return line;
}

Json command_json(const std::string& command, Json result) {
  Json j{{"command", command}, {"ok", true}};
  for (auto& [key, value] : result.items()) j[key] = std::move(value);
  return j;
}

void print(std::ostream& out, const Json& j) {
  out << j.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
}

// The error line and, with --json, the error document.
int failed(const std::string& command, const Status& status, bool json, Console& console,
           std::ostream& out) {
  if (json) print(out, error_json(command, status));
  return report_failure(status, console);
}

}  // namespace

int run_pull_command(const PullModelOptions& options, bool json, const OutputOptions& output,
                     std::ostream& out, std::ostream& err) {
  Console console(out, err, json ? 0 : output.verbosity, output.progress && !json);
  auto result = pull_model(options, console, interrupt_token());
  if (!result) return failed("pull", result.status(), json, console, out);
  if (json) {
    print(out, command_json("pull", pull_json(options.repo, *result)));
  } else {
    console.detail("commit " + result->commit + ": " + count_of(result->files_downloaded, "file") +
                   " downloaded (" + format_bytes(result->bytes_downloaded) + "), " +
                   std::to_string(result->files_reused) + " already present");
    // The path is the answer (scripts use it), printed even with -q.
    console.report(result->snapshot_dir);
  }
  return kExitOk;
}

int run_push_command(const PushModelOptions& options, bool json, const OutputOptions& output,
                     std::ostream& out, std::ostream& err) {
  Console console(out, err, json ? 0 : output.verbosity, output.progress && !json);
  auto result = push_model(options, console, interrupt_token());
  if (!result) return failed("push", result.status(), json, console, out);
  if (json) {
    print(out, command_json("push", push_json(options.repo, *result)));
  } else {
    console.result(push_line(options.repo, options.folder, *result));
  }
  return kExitOk;
}

int run_publish_command(const PublishOptions& options, bool json, const OutputOptions& output,
                        std::ostream& out, std::ostream& err) {
  Console console(out, err, json ? 0 : output.verbosity, output.progress && !json);
  auto result = publish_model(options, console, interrupt_token());
  if (!result) return failed("publish", result.status(), json, console, out);
  if (json) {
    print(out, command_json("publish", Json{{"source", pull_json(options.source, result->pull)},
                                            {"df11_dir", result->df11_dir},
                                            {"compressed", result->compressed},
                                            {"push", push_json(options.target, result->push)}}));
  } else {
    console.result(push_line(options.target, result->df11_dir, result->push));
  }
  return kExitOk;
}

}  // namespace df11::app
