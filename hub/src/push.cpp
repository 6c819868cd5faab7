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
#include <thread>

#include "df11/hash.h"
#include "df11/sha256.h"
#include "df11/hub/hub.h"
#include "hub_api.h"
#include "parallel_transfers.h"

namespace df11::hub {
namespace {

namespace fs = std::filesystem;

constexpr size_t kPreuploadBatch = 256;      // the Hub's limit per preupload call
constexpr size_t kLfsBatch = 100;            // objects per LFS batch call
constexpr size_t kMaxFilesPerCommit = 99;    // the Hub recommends fewer than 100
constexpr uint64_t kMaxRegularBytes = 64ull << 20;  // a "regular" file travels base64 in memory

struct LocalFile {
  std::string path;      // repo path ('/'-separated)
  std::string absolute;
  uint64_t size = 0;
  std::string sha256;
  std::string sample;
  bool lfs = false;
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

// The first 512 bytes only, when the SHA-256 is already known.
Status read_sample(LocalFile& f) {
  const int fd = ::open(f.absolute.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(ErrorCode::kIo, f.absolute + ": open: " + std::strerror(errno));
  f.sample.assign(static_cast<size_t>(std::min<uint64_t>(512, f.size)), '\0');
  size_t done = 0;
  while (done < f.sample.size()) {
    const ssize_t n = ::pread(fd, f.sample.data() + done, f.sample.size() - done,
                              static_cast<off_t>(done));
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

// SHA-256 and the first 512 bytes, streamed (bounded memory).
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
    if (total < 512) {
      f.sample.append(reinterpret_cast<const char*>(buffer.data()),
                      std::min<size_t>(static_cast<size_t>(n), 512 - total));
    }
    hasher.update({buffer.data(), static_cast<size_t>(n)});
    total += static_cast<uint64_t>(n);
  }
  ::close(fd);
  if (total != f.size) return Status(ErrorCode::kIo, f.absolute + ": changed while hashing");
  f.sha256 = hasher.hex_digest();
  return Status::ok();
}

Result<std::string> read_whole(const LocalFile& f) {
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
  if (!config.token) {
    return Status(ErrorCode::kInvalidArgument,
                  "push needs a Hub token with write access: set HF_TOKEN or write HF_HOME/token");
  }
  DF11_ASSIGN_OR_RETURN(std::vector<LocalFile> files, list_local(options.folder));
  PushResult result;
  result.files = static_cast<int>(files.size());

  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  const Clock::time_point hash_start = Clock::now();
  // Hash every file whose SHA-256 the caller does not give (parallel, streamed) before
  // talking to the Hub.
  std::vector<bool> known(files.size(), false);
  for (size_t i = 0; i < files.size(); ++i) {
    const auto it = options.known_sha256.find(files[i].path);
    if (it != options.known_sha256.end() && it->second.size == files[i].size &&
        is_lower_hex(it->second.sha256, 64)) {
      files[i].sha256 = it->second.sha256;
      known[i] = true;
    } else {
      ++result.files_hashed;
    }
  }
  {
    std::atomic<size_t> next{0};
    std::mutex mutex;
    Status first;
    auto worker = [&] {
      for (size_t i; (i = next.fetch_add(1)) < files.size();) {
        Status s = known[i] ? read_sample(files[i]) : hash_file(files[i], control.cancelled);
        if (!s.is_ok()) {
          std::lock_guard<std::mutex> lock(mutex);
          if (first.is_ok()) first = s;
          return;
        }
      }
    };
    std::vector<std::thread> pool;
    const int threads = std::max(1, std::min<int>(control.threads, static_cast<int>(files.size())));
    for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (std::thread& t : pool) t.join();
    DF11_RETURN_IF_ERROR(first);
  }
  result.hash_seconds = seconds_since(hash_start);

  const Clock::time_point transfer_start = Clock::now();
  // A rejected token is reported as such before anything is created.
  DF11_RETURN_IF_ERROR(whoami(config, control).status());
  HttpSession session(config, control);
  DF11_RETURN_IF_ERROR(create_repo(session, options.ref.repo_id, options.private_repo));
  for (size_t begin = 0; begin < files.size(); begin += kPreuploadBatch) {
    const size_t end = std::min(files.size(), begin + kPreuploadBatch);
    std::vector<PreuploadFile> batch;
    for (size_t i = begin; i < end; ++i) batch.push_back({files[i].path, files[i].size, files[i].sample});
    DF11_ASSIGN_OR_RETURN(std::vector<bool> lfs,
                          preupload(session, options.ref, batch, options.create_pr));
    // Empty files cannot go through LFS storage.
    for (size_t i = begin; i < end; ++i) files[i].lfs = lfs[i - begin] && files[i].size > 0;
  }

  // One upload per distinct object (two paths with the same bytes share it).
  std::map<std::string, const LocalFile*> objects;
  for (const LocalFile& f : files) {
    if (f.lfs) objects.emplace(f.sha256, &f);
  }
  std::vector<LfsAction> todo;
  std::vector<const LocalFile*> todo_files;
  uint64_t bytes_total = 0;
  {
    std::vector<LfsObject> batch;
    std::vector<const LocalFile*> batch_files;
    auto flush = [&]() -> Status {
      if (batch.empty()) return Status::ok();
      DF11_ASSIGN_OR_RETURN(std::vector<LfsAction> actions, lfs_batch(session, options.ref, batch));
      for (size_t i = 0; i < actions.size(); ++i) {
        if (actions[i].stored) {
          ++result.lfs_already_stored;
        } else {
          bytes_total += actions[i].size;
          todo.push_back(std::move(actions[i]));
          todo_files.push_back(batch_files[i]);
        }
      }
      batch.clear();
      batch_files.clear();
      return Status::ok();
    };
    for (const auto& [oid, f] : objects) {
      batch.push_back({oid, f->size});
      batch_files.push_back(f);
      if (batch.size() == kLfsBatch) DF11_RETURN_IF_ERROR(flush());
    }
    DF11_RETURN_IF_ERROR(flush());
  }

  ProgressMeter meter(control, bytes_total, static_cast<int>(todo.size()));
  std::mutex mutex;
  Status s = run_parallel(config, control, todo.size(), [&](HttpSession& worker, size_t i) -> Status {
    const LocalFile& f = *todo_files[i];
    const int fd = ::open(f.absolute.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status(ErrorCode::kIo, f.absolute + ": open: " + std::strerror(errno));
    uint64_t reported = 0;
    Status up = lfs_upload(worker, todo[i], fd, [&](uint64_t now) {
      // A retried part restarts its count: only forward progress is reported.
      if (now > reported) {
        meter.add_bytes(now - reported);
        reported = now;
      }
    });
    ::close(fd);
    DF11_RETURN_IF_ERROR(up.with_context(f.path));
    meter.file_done();
    std::lock_guard<std::mutex> lock(mutex);
    result.bytes_uploaded += f.size;
    ++result.lfs_uploaded;
    return Status::ok();
  });
  DF11_RETURN_IF_ERROR(s);

  // Commit only now that every object is stored.
  for (size_t begin = 0; begin < files.size(); begin += kMaxFilesPerCommit) {
    const size_t end = std::min(files.size(), begin + kMaxFilesPerCommit);
    std::vector<CommitFile> ops;
    for (size_t i = begin; i < end; ++i) {
      CommitFile op;
      op.path = files[i].path;
      op.lfs = files[i].lfs;
      if (op.lfs) {
        op.oid = files[i].sha256;
        op.size = files[i].size;
      } else {
        DF11_ASSIGN_OR_RETURN(op.content, read_whole(files[i]));
        if (sha256_hex({reinterpret_cast<const uint8_t*>(op.content.data()), op.content.size()}) !=
            files[i].sha256) {
          return Status(ErrorCode::kIo, files[i].absolute + ": changed during the upload");
        }
      }
      ops.push_back(std::move(op));
    }
    std::string summary = options.commit_message;
    if (files.size() > kMaxFilesPerCommit) {
      summary += " (part " + std::to_string(begin / kMaxFilesPerCommit + 1) + " of " +
                 std::to_string((files.size() + kMaxFilesPerCommit - 1) / kMaxFilesPerCommit) + ")";
    }
    DF11_ASSIGN_OR_RETURN(CommitResult c, commit(session, options.ref, summary, ops, options.create_pr));
    result.commit_oid = c.oid;
    result.commit_url = c.url;
    if (!c.pr_url.empty()) result.pr_url = c.pr_url;
    ++result.commits;
  }
  result.transfer_seconds = seconds_since(transfer_start);
  return result;
}

}  // namespace df11::hub
