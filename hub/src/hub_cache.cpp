#include "hub_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "df11/hub/hub.h"

namespace df11::hub {
namespace {

Status io_error(const std::string& what, const std::string& path) {
  return Status(ErrorCode::kIo, path + ": " + what + ": " + std::strerror(errno));
}

std::string random_hex8() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* kHex = "0123456789abcdef";
  std::string out;
  uint64_t v = rng();
  for (int i = 0; i < 8; ++i, v >>= 4) out += kHex[v & 15];
  return out;
}

std::string parent_dir(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

}  // namespace

CachePaths cache_paths(const std::string& cache_dir, const std::string& repo_id) {
  const std::string folder = repo_folder_name(repo_id);
  return {cache_dir + "/" + folder, cache_dir + "/.locks/" + folder};
}

Status make_dirs(const std::string& dir) {
  if (dir.empty()) return Status::ok();
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Status::ok();
    return Status(ErrorCode::kIo, dir + ": exists and is not a folder");
  }
  const size_t slash = dir.rfind('/');
  if (slash != std::string::npos && slash > 0)
    DF11_RETURN_IF_ERROR(make_dirs(dir.substr(0, slash)));
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return io_error("mkdir", dir);
  return Status::ok();
}

Result<FileLock> FileLock::acquire(const std::string& path) {
  DF11_RETURN_IF_ERROR(make_dirs(parent_dir(path)));
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("open lock", path);
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      const Status s = io_error("flock", path);
      ::close(fd);
      return s;
    }
  }
  return FileLock(fd);
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

std::string incomplete_name(const std::string& path) {
  return path + "." + random_hex8() + ".incomplete";
}

int64_t file_size_or_minus1(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  return st.st_size;
}

Status link_snapshot_file(const CachePaths& paths, const std::string& commit,
                          const std::string& repo_path, const std::string& etag) {
  const std::string link = paths.snapshot(commit) + "/" + repo_path;
  DF11_RETURN_IF_ERROR(make_dirs(parent_dir(link)));
  // From snapshots/<commit>/<dirs...>/ back up to the storage folder.
  std::string target;
  const size_t depth = 2 + static_cast<size_t>(std::count(repo_path.begin(), repo_path.end(), '/'));
  for (size_t i = 0; i < depth; ++i) target += "../";
  target += "blobs/" + etag;
  const std::string tmp = incomplete_name(link);
  if (::symlink(target.c_str(), tmp.c_str()) != 0) return io_error("symlink", tmp);
  if (::rename(tmp.c_str(), link.c_str()) != 0) {
    const Status s = io_error("rename", link);
    ::unlink(tmp.c_str());
    return s;
  }
  return Status::ok();
}

Status write_file_atomic(const std::string& path, const std::string& text) {
  DF11_RETURN_IF_ERROR(make_dirs(parent_dir(path)));
  const std::string tmp = incomplete_name(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("create", tmp);
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    const Status s = io_error("write", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  return finish_and_rename(fd, tmp, path);
}

std::string read_small_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buffer[4096];
  const ssize_t n = ::read(fd, buffer, sizeof buffer);
  ::close(fd);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

Status finish_and_rename(int fd, const std::string& from, const std::string& to) {
  // The data reaches the disk before the name does: a crash never leaves a renamed blob
  // whose bytes were lost.
  if (::fdatasync(fd) != 0) {
    const Status s = io_error("fdatasync", from);
    ::close(fd);
    ::unlink(from.c_str());
    return s;
  }
  if (::close(fd) != 0) {
    const Status s = io_error("close", from);
    ::unlink(from.c_str());
    return s;
  }
  if (::rename(from.c_str(), to.c_str()) != 0) {
    const Status s = io_error("rename", to);
    ::unlink(from.c_str());
    return s;
  }
  return Status::ok();
}

}  // namespace df11::hub
