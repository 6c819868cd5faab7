// df11::hub::push_folder: create, preupload, LFS batch + uploads, then commit (huggingface_hub's
// _commit_api.py order). The commit names only objects the server has confirmed storing.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "df11/hash.h"
#include "df11/hub/hub.h"
#include "df11/sha256.h"
#include "git_blob.h"
#include "hub_api.h"
#include "parallel_transfers.h"

namespace df11::hub {
namespace {

namespace fs = std::filesystem;

constexpr size_t kPreuploadBatch = 256;             // the Hub's limit per preupload call
constexpr size_t kMaxFilesPerCommit = 99;           // the Hub recommends fewer than 100
constexpr uint64_t kMaxRegularBytes = 64ull << 20;  // a "regular" file travels base64 in memory

struct LocalFile {
  std::string path;  // repo path ('/'-separated)
  std::string absolute;
  uint64_t size = 0;
  std::string sha256;
  std::string sample;
  bool lfs = false;
  std::optional<std::string> content;  // PushOptions::extra_files: no file on disk
};

Result<std::vector<LocalFile>> list_local(const std::string& folder) {
  std::vector<LocalFile> files;
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    return Status(ErrorCode::kNotFound, folder + ": not a folder");
  }
  fs::recursive_directory_iterator it(folder, ec), end;
  if (ec) return Status(ErrorCode::kIo, folder + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return Status(ErrorCode::kIo, folder + ": " + ec.message());
    const fs::path rel = it->path().lexically_relative(folder);
    const std::string first = rel.begin()->string();
    // huggingface_hub's upload_folder skips these too: git data and its own download records.
    if (first == ".git" || first == ".cache") {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec)) continue;
    LocalFile f;
    f.path = rel.generic_string();
    f.absolute = it->path().string();
    if (!is_safe_repo_path(f.path)) {
      return Status(ErrorCode::kInvalidArgument, f.absolute + ": name cannot be a repo path");
    }
    f.size = it->file_size(ec);
    if (ec) return Status(ErrorCode::kIo, f.absolute + ": " + ec.message());
    files.push_back(std::move(f));
  }
  std::sort(files.begin(), files.end(),
            [](const LocalFile& a, const LocalFile& b) { return a.path < b.path; });
  if (files.empty()) return Status(ErrorCode::kNotFound, folder + ": no files to upload");
  return files;
}

// The first 512 bytes (preupload's sample).
Status read_sample(LocalFile& f) {
  if (f.content) {
    f.sample = f.content->substr(0, 512);
    return Status::ok();
  }
  const int fd = ::open(f.absolute.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(ErrorCode::kIo, f.absolute + ": open: " + std::strerror(errno));
  f.sample.assign(static_cast<size_t>(std::min<uint64_t>(512, f.size)), '\0');
  size_t done = 0;
  while (done < f.sample.size()) {
    const ssize_t n =
        ::pread(fd, f.sample.data() + done, f.sample.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return Status(ErrorCode::kIo, f.absolute + ": read failed or file shrank");
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return Status::ok();
}

// SHA-256, streamed (bounded memory).
Status hash_file(LocalFile& f, const std::function<bool()>& cancelled) {
  const int fd = ::open(f.absolute.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(ErrorCode::kIo, f.absolute + ": open: " + std::strerror(errno));
  std::vector<uint8_t> buffer(1 << 20);
  Sha256 hasher;
  uint64_t total = 0;
  for (;;) {
    if (cancelled && cancelled()) {
      ::close(fd);
      return Status(ErrorCode::kInterrupted, "interrupted");
    }
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const Status s(ErrorCode::kIo, f.absolute + ": read: " + std::strerror(errno));
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    hasher.update({buffer.data(), static_cast<size_t>(n)});
    total += static_cast<uint64_t>(n);
  }
  ::close(fd);
  if (total != f.size) return Status(ErrorCode::kIo, f.absolute + ": changed while hashing");
  f.sha256 = hasher.hex_digest();
  return Status::ok();
}

Result<std::string> read_whole(const LocalFile& f) {
  if (f.content) return *f.content;
  if (f.size > kMaxRegularBytes) {
    return Status(ErrorCode::kResourceLimit,
                  f.path + ": the Hub asked for a regular (non-LFS) upload of a file over 64 MiB");
  }
  std::string out(static_cast<size_t>(f.size), '\0');
  const int fd = ::open(f.absolute.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(ErrorCode::kIo, f.absolute + ": open: " + std::strerror(errno));
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n <= 0) {
      ::close(fd);
      return Status(ErrorCode::kIo, f.absolute + ": read failed or file shrank");
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return out;
}

}  // namespace

Result<PushResult> push_folder(const HubConfig& config, const PushOptions& options,
                               const TransferControl& control) {
  DF11_RETURN_IF_ERROR(require_token(config));
  DF11_ASSIGN_OR_RETURN(std::vector<LocalFile> files, list_local(options.folder));
  for (const PushOptions::ExtraFile& extra : options.extra_files) {
    if (!is_safe_repo_path(extra.path)) {
      return Status(ErrorCode::kInvalidArgument, extra.path + ": not a repo path");
    }
    for (const LocalFile& f : files) {
      if (f.path == extra.path) {
        return Status(ErrorCode::kInvalidArgument,
                      f.absolute + ": the folder has this file already");
      }
    }
    LocalFile f;
    f.path = extra.path;
    f.absolute = "(generated) " + extra.path;
    f.size = extra.content.size();
    f.content = extra.content;
    files.push_back(std::move(f));
  }
  PushResult result;
  result.files = static_cast<int>(files.size());

  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  const Clock::time_point start = Clock::now();
  for (LocalFile& f : files) DF11_RETURN_IF_ERROR(read_sample(f));

  if (!options.repo_ready) {
    DF11_RETURN_IF_ERROR(
        prepare_repo(config, options.ref.repo_id, options.private_repo, control).status());
  }
  HttpSession session(config, control);
  for (size_t begin = 0; begin < files.size(); begin += kPreuploadBatch) {
    const size_t end = std::min(files.size(), begin + kPreuploadBatch);
    std::vector<PreuploadFile> batch;
    for (size_t i = begin; i < end; ++i)
      batch.push_back({files[i].path, files[i].size, files[i].sample});
    DF11_ASSIGN_OR_RETURN(std::vector<bool> lfs,
                          preupload(session, options.ref, batch, options.create_pr));
    // Empty files cannot go through LFS storage.
    for (size_t i = begin; i < end; ++i) {
      files[i].lfs = lfs[i - begin] && files[i].size > 0 && !files[i].content;
    }
  }

  std::mutex mutex;  // guards result, `claimed` and the gate's wait time
  // The SHA-256 of files[i] from the caller, else from the gate, else nullopt.
  const auto given_sha256 = [&](size_t i) -> std::optional<std::string> {
    const LocalFile& f = files[i];
    const auto it = options.known_sha256.find(f.path);
    if (it != options.known_sha256.end() && it->second.size == f.size &&
        is_lower_hex(it->second.sha256, 64)) {
      return it->second.sha256;
    }
    if (!options.gate) return std::nullopt;
    const Clock::time_point wait = Clock::now();
    std::optional<std::string> sha = options.gate->sha256(f.path);
    std::lock_guard<std::mutex> lock(mutex);
    result.gate_wait_seconds += seconds_since(wait);
    if (sha && !is_lower_hex(*sha, 64)) sha.reset();
    return sha;
  };

  // Each LFS file on its own worker: its SHA-256 (given, or hashed here), the LFS batch
  // answer for it, and its bytes when the server lacks them. Two paths with the same bytes
  // share one object: the first to claim it sends it.
  std::vector<size_t> lfs_files;
  uint64_t lfs_bytes = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    if (!files[i].lfs) continue;
    lfs_files.push_back(i);
    lfs_bytes += files[i].size;
  }
  std::set<std::string> claimed;
  ProgressMeter meter(control, lfs_bytes, static_cast<int>(lfs_files.size()));
  Status s =
      run_parallel(config, control, lfs_files.size(), [&](HttpSession& worker, size_t n) -> Status {
        LocalFile& f = files[lfs_files[n]];
        if (std::optional<std::string> sha = given_sha256(lfs_files[n])) {
          f.sha256 = std::move(*sha);
        } else {
          DF11_RETURN_IF_ERROR(hash_file(f, control.cancelled));
          std::lock_guard<std::mutex> lock(mutex);
          ++result.files_hashed;
        }
        {
          std::lock_guard<std::mutex> lock(mutex);
          if (!claimed.insert(f.sha256).second) {
            meter.add_bytes(f.size);
            meter.file_done();
            return Status::ok();
          }
        }
        DF11_ASSIGN_OR_RETURN(std::vector<LfsAction> actions,
                              lfs_batch(worker, options.ref, {LfsObject{f.sha256, f.size}}));
        if (actions.size() != 1) {
          return Status(ErrorCode::kBadJson, f.path + ": the LFS batch answer has " +
                                                 std::to_string(actions.size()) + " objects for 1");
        }
        if (actions[0].stored) {
          meter.add_bytes(f.size);
          meter.file_done();
          std::lock_guard<std::mutex> lock(mutex);
          ++result.lfs_already_stored;
          return Status::ok();
        }
        const int fd = ::open(f.absolute.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return Status(ErrorCode::kIo, f.absolute + ": open: " + std::strerror(errno));
        uint64_t reported = 0;
        Status up = lfs_upload(worker, actions[0], fd, [&](uint64_t now) {
          // A retried part restarts its count: only forward progress is reported.
          if (now > reported) {
            meter.add_bytes(now - reported);
            reported = now;
          }
        });
        ::close(fd);
        DF11_RETURN_IF_ERROR(up.with_context(f.path));
        if (f.size > reported) meter.add_bytes(f.size - reported);
        meter.file_done();
        std::lock_guard<std::mutex> lock(mutex);
        result.bytes_uploaded += f.size;
        ++result.lfs_uploaded;
        return Status::ok();
      });
  DF11_RETURN_IF_ERROR(s);

  // Commit only now that every object is stored, and the check beside the upload passed.
  if (options.gate) {
    const Clock::time_point wait = Clock::now();
    Status verdict = options.gate->verdict();
    result.gate_wait_seconds += seconds_since(wait);
    DF11_RETURN_IF_ERROR(verdict);
  }
  // What the commit changes: with the revision's listing, only files whose bytes it does not
  // have, and the remote weight files the folder lacks go (huggingface_hub's upload_folder
  // with delete_patterns): the revision then holds one layout, the folder's.
  std::map<std::string, const RemoteFile*> remote;
  if (options.remote) {
    for (const RemoteFile& f : options.remote->files) remote.emplace(f.path, &f);
  }
  std::set<std::string> local;
  for (const LocalFile& f : files) local.insert(f.path);
  for (const auto& [path, f] : remote) {
    if (is_weight_file(path) && local.count(path) == 0) result.deleted.push_back(path);
  }
  std::vector<CommitFile> ops;
  for (size_t i = 0; i < files.size(); ++i) {
    CommitFile op;
    op.path = files[i].path;
    op.lfs = files[i].lfs;
    if (op.lfs) {
      op.oid = files[i].sha256;
      op.size = files[i].size;
    } else {
      DF11_ASSIGN_OR_RETURN(op.content, read_whole(files[i]));
      const std::string sha =
          sha256_hex({reinterpret_cast<const uint8_t*>(op.content.data()), op.content.size()});
      if (std::optional<std::string> given = given_sha256(i)) {
        // What was verified is what is sent.
        if (*given != sha) {
          return Status(ErrorCode::kIo, files[i].absolute + ": changed during the upload");
        }
      } else {
        ++result.files_hashed;
      }
    }
    const auto there = remote.find(op.path);
    if (there != remote.end()) {
      const RemoteFile& r = *there->second;
      const bool same = op.lfs ? r.lfs && r.etag == op.oid && r.size == op.size
                               : !r.lfs && r.etag == git_blob_id(op.content);
      if (same) continue;
    }
    ops.push_back(std::move(op));
  }
  result.files_committed = static_cast<int>(ops.size());
  for (const std::string& path : result.deleted) {
    CommitFile op;
    op.path = path;
    op.deleted = true;
    ops.push_back(std::move(op));
  }
  if (ops.empty()) {
    result.up_to_date = true;
    result.commit_oid = options.remote->commit;
    result.transfer_seconds = seconds_since(start);
    return result;
  }
  const size_t n_commits = (ops.size() + kMaxFilesPerCommit - 1) / kMaxFilesPerCommit;
  for (size_t begin = 0; begin < ops.size(); begin += kMaxFilesPerCommit) {
    const size_t end = std::min(ops.size(), begin + kMaxFilesPerCommit);
    std::vector<CommitFile> batch(std::make_move_iterator(ops.begin() + begin),
                                  std::make_move_iterator(ops.begin() + end));
    std::string summary = options.commit_message;
    if (n_commits > 1) {
      summary += " (part " + std::to_string(begin / kMaxFilesPerCommit + 1) + " of " +
                 std::to_string(n_commits) + ")";
    }
    // The first commit names the listed head as its parent: deletions computed from a listing
    // that went stale are refused, not applied. (Later parts go onto a pull request's branch,
    // whose head this side does not list.)
    const std::string parent = begin == 0 && options.remote ? options.remote->commit : "";
    DF11_ASSIGN_OR_RETURN(CommitResult c,
                          commit(session, options.ref, summary, batch, options.create_pr, parent));
    result.commit_oid = c.oid;
    result.commit_url = c.url;
    if (!c.pr_url.empty()) result.pr_url = c.pr_url;
    ++result.commits;
    if (options.on_commit) options.on_commit(c.oid);
  }
  result.transfer_seconds = seconds_since(start);
  return result;
}

}  // namespace df11::hub
