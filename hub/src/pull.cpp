// df11::hub::pull: list, then HEAD + GET each missing file into the shared cache or a local
// folder (huggingface_hub's file_download.py layout), streaming to an .incomplete file that
// is checked and renamed.
#include <fcntl.h>
#include <fnmatch.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "df11/hash.h"
#include "df11/hub/hub.h"
#include "df11/sha256.h"
#include "hub_api.h"
#include "hub_cache.h"
#include "parallel_transfers.h"

namespace df11::hub {
namespace {

bool selected(const std::string& path, const std::vector<std::string>& include) {
  if (include.empty()) return true;
  for (const std::string& glob : include) {
    if (::fnmatch(glob.c_str(), path.c_str(), 0) == 0) return true;
  }
  return false;
}

// Takes over the prefix an interrupted run kept at `resume_path` (renamed to `tmp_path`, so
// no other process sees it; the caller holds the blob's lock): hashes it and returns its
// length, or 0 when there is none or it is not shorter than `size`.
uint64_t adopt_partial(const std::string& resume_path, const std::string& tmp_path, uint64_t size,
                       Sha256& hasher) {
  const int64_t have = file_size_or_minus1(resume_path);
  if (have <= 0 || static_cast<uint64_t>(have) >= size ||
      ::rename(resume_path.c_str(), tmp_path.c_str()) != 0) {
    return 0;
  }
  const int fd = ::open(tmp_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  std::vector<uint8_t> buffer(1 << 20);
  uint64_t total = 0;
  for (ssize_t n; (n = ::read(fd, buffer.data(), buffer.size())) > 0;) {
    hasher.update({buffer.data(), static_cast<size_t>(n)});
    total += static_cast<uint64_t>(n);
  }
  ::close(fd);
  if (total != static_cast<uint64_t>(have)) {
    hasher.reset();
    return 0;
  }
  return total;
}

// GET `url` into `tmp_path`, resuming with Range after a dropped connection, and checking the
// size and (when `sha256` is set) the SHA-256 of the whole. A mismatch starts over once, then
// fails with kCorruptData. On success the file is renamed to `final_path`. On failure nothing
// is left, except after an interruption: the bytes received are kept at `resume_path` (not a
// blob name: nothing reads it but the next download of this blob, which continues there).
Status download_file(HttpSession& session, const std::string& url, const std::string& tmp_path,
                     const std::string& resume_path, const std::string& final_path, uint64_t size,
                     const std::string& sha256, const std::string& label, ProgressMeter& meter,
                     uint64_t* received) {
  for (int round = 0;; ++round) {
    Sha256 hasher;
    uint64_t written = round == 0 ? adopt_partial(resume_path, tmp_path, size, hasher) : 0;
    const int fd =
        ::open(tmp_path.c_str(),
               O_WRONLY | O_CREAT | O_CLOEXEC | (written > 0 ? O_APPEND : O_TRUNC), 0644);
    if (fd < 0) return Status(ErrorCode::kIo, tmp_path + ": create: " + std::strerror(errno));
    meter.add_bytes(written);
    HttpRequest request;
    request.timeout = TimeoutKind::kTransfer;
    request.url = url;
    request.max_body = 0;
    request.on_retry = [&] {
      request.headers.clear();
      if (written > 0) request.headers.push_back("Range: bytes=" + std::to_string(written) + "-");
    };
    request.on_retry();
    request.on_start = [&](const HttpResponse& headers, long status) -> Status {
      if (status == 206) {
        const std::string range = headers.header("content-range");
        if (range.rfind("bytes " + std::to_string(written) + "-", 0) != 0) {
          return Status(ErrorCode::kCorruptData,
                        label + ": the server resumed at the wrong offset");
        }
        return Status::ok();
      }
      if (written > 0) {
        // 200 to a Range request: the server sends everything again.
        if (::ftruncate(fd, 0) != 0 || ::lseek(fd, 0, SEEK_SET) != 0) {
          return Status(ErrorCode::kIo, tmp_path + ": truncate: " + std::strerror(errno));
        }
        hasher.reset();
        written = 0;
      }
      return Status::ok();
    };
    request.sink = [&](std::span<const uint8_t> bytes) -> Status {
      if (written + bytes.size() > size) {
        return Status(ErrorCode::kCorruptData, label + ": the server sent more than the " +
                                                   std::to_string(size) + " bytes announced");
      }
      size_t done = 0;
      while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0) {
          if (errno == EINTR) continue;
          return Status(ErrorCode::kIo, tmp_path + ": write: " + std::strerror(errno));
        }
        done += static_cast<size_t>(n);
      }
      if (!sha256.empty()) hasher.update(bytes);
      written += bytes.size();
      *received += bytes.size();
      meter.add_bytes(bytes.size());
      return Status::ok();
    };
    Status s = session.send(request, "GET " + label).status();
    if (s.is_ok() && written != size) {
      s = Status(ErrorCode::kCorruptData, label + ": received " + std::to_string(written) +
                                              " bytes, the Hub announced " + std::to_string(size));
    } else if (s.is_ok() && !sha256.empty() && hasher.hex_digest() != sha256) {
      s = Status(ErrorCode::kCorruptData,
                 label + ": SHA-256 " + hasher.hex_digest() + " differs from the Hub's " + sha256);
    }
    if (s.is_ok()) return finish_and_rename(fd, tmp_path, final_path);
    ::close(fd);
    // Only the caller's interruption keeps the prefix: a worker stopped because another
    // failed leaves nothing, like every other failure.
    const TransferControl& control = session.control();
    if (s.code() == ErrorCode::kInterrupted && written > 0 && control.cancelled &&
        control.cancelled() && ::rename(tmp_path.c_str(), resume_path.c_str()) == 0) {
      return s;
    }
    ::unlink(tmp_path.c_str());
    if (s.code() != ErrorCode::kCorruptData || round >= 1) return s;
    // One fresh try: a CDN node may have served a damaged copy.
  }
}

// HF_HUB_OFFLINE: the snapshot the cache has for the revision (refs/<revision>, or the commit
// itself), as huggingface_hub's snapshot_download(local_files_only=True) finds it; nothing is
// requested. kNotFound naming the variable when the cache does not have it.
Result<PullResult> pull_offline(const HubConfig& config, const PullOptions& options) {
  const std::string what = options.ref.repo_id + "@" + options.ref.revision;
  if (options.local_dir) {
    return Status(ErrorCode::kInvalidArgument,
                  what +
                      ": HF_HUB_OFFLINE is set: pull --local-dir needs the network (without "
                      "--local-dir the snapshot is resolved from the cache)");
  }
  const CachePaths paths = cache_paths(config.cache_dir, options.ref.repo_id);
  std::string commit = options.ref.revision;
  const bool is_commit = commit.size() == 40 && is_lower_hex(commit, 40);
  if (!is_commit) {
    commit = read_small_file(paths.storage + "/refs/" + options.ref.revision);
    while (!commit.empty() && std::isspace(static_cast<unsigned char>(commit.back()))) {
      commit.pop_back();
    }
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!is_lower_hex(commit, 40) || !fs::is_directory(paths.snapshot(commit), ec)) {
    return Status(ErrorCode::kNotFound,
                  what + ": not in the cache " + config.cache_dir +
                      ", and HF_HUB_OFFLINE is set: nothing is downloaded (unset it, or pull "
                      "once with the network)");
  }
  PullResult result;
  result.commit = commit;
  result.snapshot_dir = paths.snapshot(commit);
  fs::recursive_directory_iterator it(result.snapshot_dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;  // follows the blob links
    const std::string rel = it->path().lexically_relative(result.snapshot_dir).generic_string();
    if (!selected(rel, options.include)) continue;
    ++result.files_total;
    result.bytes_total += it->file_size(ec);
  }
  if (ec) return Status(ErrorCode::kIo, result.snapshot_dir + ": " + ec.message());
  if (result.files_total == 0) {
    return Status(ErrorCode::kNotFound,
                  what +
                      ": no file of the cached snapshot matches the --include patterns "
                      "(HF_HUB_OFFLINE is set: nothing is downloaded)");
  }
  result.files_reused = result.files_total;
  return result;
}

}  // namespace

Result<PullResult> pull(const HubConfig& config, const PullOptions& options,
                        const TransferControl& control) {
  if (config.offline) return pull_offline(config, options);
  HttpSession session(config, control);
  DF11_ASSIGN_OR_RETURN(RemoteListing listing, get_revision(session, options.ref));
  PullResult result;
  result.commit = listing.commit;
  std::vector<const RemoteFile*> files;
  for (const RemoteFile& f : listing.files) {
    if (selected(f.path, options.include)) files.push_back(&f);
  }
  if (files.empty()) {
    return Status(ErrorCode::kNotFound, options.ref.repo_id + "@" + options.ref.revision +
                                            ": no file matches the --include patterns");
  }
  result.files_total = static_cast<int>(files.size());
  for (const RemoteFile* f : files) result.bytes_total += f->size;

  const bool local = options.local_dir.has_value();
  const CachePaths paths = cache_paths(config.cache_dir, options.ref.repo_id);
  const std::string meta_dir = local ? *options.local_dir + "/.cache/huggingface/download" : "";
  result.snapshot_dir = local ? *options.local_dir : paths.snapshot(listing.commit);
  if (local) {
    DF11_RETURN_IF_ERROR(make_dirs(meta_dir));
    DF11_RETURN_IF_ERROR(
        write_file_atomic(*options.local_dir + "/.cache/huggingface/.gitignore", "*\n"));
  } else {
    DF11_RETURN_IF_ERROR(make_dirs(paths.storage + "/blobs"));
    DF11_RETURN_IF_ERROR(make_dirs(paths.snapshot(listing.commit)));
  }

  // What is already here is not fetched again.
  ProgressMeter meter(control, result.bytes_total, result.files_total);
  std::vector<const RemoteFile*> todo;
  for (const RemoteFile* f : files) {
    bool have = false;
    if (local) {
      const std::string target = *options.local_dir + "/" + f->path;
      const std::string meta = read_small_file(meta_dir + "/" + f->path + ".metadata");
      const size_t nl = meta.find('\n');
      const size_t nl2 = nl == std::string::npos ? nl : meta.find('\n', nl + 1);
      const bool meta_ok =
          nl2 != std::string::npos &&
          (meta.substr(0, nl) == listing.commit || meta.substr(nl + 1, nl2 - nl - 1) == f->etag);
      have = meta_ok && file_size_or_minus1(target) == static_cast<int64_t>(f->size);
      if (have) {
        DF11_RETURN_IF_ERROR(write_file_atomic(meta_dir + "/" + f->path + ".metadata",
                                               listing.commit + "\n" + f->etag + "\n0\n"));
      }
    } else {
      const std::string entry = paths.snapshot(listing.commit) + "/" + f->path;
      if (file_size_or_minus1(entry) == static_cast<int64_t>(f->size)) {
        have = true;
      } else if (file_size_or_minus1(paths.blob(f->etag)) == static_cast<int64_t>(f->size)) {
        DF11_RETURN_IF_ERROR(link_snapshot_file(paths, listing.commit, f->path, f->etag));
        have = true;
      }
    }
    if (have) {
      ++result.files_reused;
      meter.add_bytes(f->size);
      meter.file_done();
    } else {
      todo.push_back(f);
    }
  }

  std::mutex mutex;
  const RepoRef pinned{options.ref.repo_id, listing.commit};
  Status s =
      run_parallel(config, control, todo.size(), [&](HttpSession& worker, size_t i) -> Status {
        const RemoteFile& f = *todo[i];
        DF11_ASSIGN_OR_RETURN(FileMetadata meta, head_file(worker, pinned, f.path));
        if (meta.etag != f.etag || meta.size != f.size || meta.commit != listing.commit) {
          return Status(ErrorCode::kBadJson, options.ref.repo_id + "/" + f.path +
                                                 ": the file's HEAD disagrees with the listing "
                                                 "(etag, size or commit)");
        }
        uint64_t received = 0;
        const std::string sha = f.lfs ? f.etag : std::string();
        if (local) {
          const std::string target = *options.local_dir + "/" + f.path;
          const std::string meta_path = meta_dir + "/" + f.path + ".metadata";
          DF11_RETURN_IF_ERROR(make_dirs(target.substr(0, target.rfind('/'))));
          DF11_ASSIGN_OR_RETURN(FileLock lock,
                                FileLock::acquire(meta_dir + "/" + f.path + ".lock"));
          const std::string partial = meta_dir + "/" + f.path + "." + f.etag;
          DF11_RETURN_IF_ERROR(download_file(worker, meta.location, incomplete_name(partial),
                                             partial + ".incomplete", target, f.size, sha, f.path,
                                             meter, &received));
          DF11_RETURN_IF_ERROR(write_file_atomic(
              meta_path,
              listing.commit + "\n" + f.etag + "\n" + std::to_string(std::time(nullptr)) + "\n"));
        } else {
          DF11_ASSIGN_OR_RETURN(FileLock lock,
                                FileLock::acquire(paths.lock_dir + "/" + f.etag + ".lock"));
          // Another process may have fetched it while we waited for the lock.
          if (file_size_or_minus1(paths.blob(f.etag)) != static_cast<int64_t>(f.size)) {
            const std::string blob = paths.blob(f.etag);
            DF11_RETURN_IF_ERROR(download_file(worker, meta.location, incomplete_name(blob),
                                               blob + ".incomplete", blob, f.size, sha, f.path,
                                               meter, &received));
          } else {
            meter.add_bytes(f.size);
          }
          DF11_RETURN_IF_ERROR(link_snapshot_file(paths, listing.commit, f.path, f.etag));
        }
        {
          std::lock_guard<std::mutex> lock(mutex);
          result.bytes_downloaded += received;
          ++result.files_downloaded;
        }
        meter.file_done();
        return Status::ok();
      });
  DF11_RETURN_IF_ERROR(s);
  if (!local && options.ref.revision != listing.commit) {
    DF11_RETURN_IF_ERROR(
        write_file_atomic(paths.storage + "/refs/" + options.ref.revision, listing.commit));
  }
  return result;
}

}  // namespace df11::hub
