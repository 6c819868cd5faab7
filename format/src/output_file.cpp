#include <fcntl.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <utility>

#include "df11/file_io.h"
#include "posix_error.h"

namespace df11 {
namespace {

// One write() call never asks for more than this: Linux caps a single write at ~2 GiB anyway,
// and smaller calls keep EINTR retries cheap.
constexpr size_t kMaxWriteChunk = size_t{1} << 30;

constexpr uint64_t kMaxOffT = static_cast<uint64_t>(std::numeric_limits<off_t>::max());

// Makes the rename durable: fsync the directory that holds the new name. Best effort: some
// filesystems cannot fsync a directory, and the data itself is already on disk.
void sync_parent_directory(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::filesystem::path dir = parent.empty() ? std::filesystem::path(".") : parent;
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)fsync(fd);
  ::close(fd);
}

}  // namespace

Result<OutputFile> OutputFile::create(const std::string& path) {
  if (path.empty()) return Status(ErrorCode::kInvalidArgument, "output path is empty");
  std::string temp = path + ".df11-tmp-" + std::to_string(static_cast<long>(getpid()));
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    return detail::errno_status(ErrorCode::kIo, path, "cannot create temporary file '" + temp + "'",
                                errno);
  }
  return OutputFile(path, std::move(temp), fd);
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)),
      temp_path_(std::exchange(other.temp_path_, std::string())),
      fd_(std::exchange(other.fd_, -1)),
      append_offset_(std::exchange(other.append_offset_, 0)) {}

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    abandon();
    path_ = std::move(other.path_);
    temp_path_ = std::exchange(other.temp_path_, std::string());
    fd_ = std::exchange(other.fd_, -1);
    append_offset_ = std::exchange(other.append_offset_, 0);
  }
  return *this;
}

OutputFile::~OutputFile() { abandon(); }

void OutputFile::abandon() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (!temp_path_.empty()) {
    ::unlink(temp_path_.c_str());
    temp_path_.clear();
  }
}

Status OutputFile::write_error(const char* what, uint64_t offset, uint64_t size, int err) const {
  return Status(ErrorCode::kIo, path_ + ": " + what + " " + std::to_string(size) +
                                    " bytes at offset " + std::to_string(offset) +
                                    " (temporary file '" + temp_path_ +
                                    "'): " + std::strerror(err));
}

Status OutputFile::pwrite_all(uint64_t offset, std::span<const uint8_t> bytes) const {
  if (fd_ < 0) return Status(ErrorCode::kInvalidArgument, path_ + ": output file is closed");
  if (offset > kMaxOffT || bytes.size() > kMaxOffT - offset) {
    return write_error("cannot write", offset, bytes.size(), EFBIG);
  }
  const uint8_t* p = bytes.data();
  size_t left = bytes.size();
  uint64_t at = offset;
  while (left > 0) {
    const ssize_t n = ::pwrite(fd_, p, std::min(left, kMaxWriteChunk), static_cast<off_t>(at));
    if (n < 0) {
      if (errno == EINTR) continue;
      return write_error("cannot write", offset, bytes.size(), errno);
    }
    // A regular file only returns 0 for a non-empty write when it cannot grow: treat it as the
    // disk being full rather than spinning.
    if (n == 0) return write_error("cannot write", offset, bytes.size(), ENOSPC);
    p += n;
    left -= static_cast<size_t>(n);
    at += static_cast<uint64_t>(n);
  }
  return Status::ok();
}

Status OutputFile::append(std::span<const uint8_t> bytes) {
  DF11_RETURN_IF_ERROR(pwrite_all(append_offset_, bytes));
  append_offset_ += bytes.size();
  return Status::ok();
}

Status OutputFile::resize(uint64_t size) const {
  if (fd_ < 0) return Status(ErrorCode::kInvalidArgument, path_ + ": output file is closed");
  if (size > kMaxOffT) return write_error("cannot resize to", 0, size, EFBIG);
  while (ftruncate(fd_, static_cast<off_t>(size)) != 0) {
    if (errno != EINTR) return write_error("cannot resize to", 0, size, errno);
  }
  return Status::ok();
}

Status OutputFile::preallocate(uint64_t size) const {
  if (fd_ < 0) return Status(ErrorCode::kInvalidArgument, path_ + ": output file is closed");
  if (size == 0) return Status::ok();
  if (size > kMaxOffT) return write_error("cannot preallocate", 0, size, EFBIG);
  // tmpfs holds files in memory pages: fallocate there allocates every page up front, on
  // this one thread and under the file's lock (0.27 s per GB measured), and the writes that
  // follow only save what it spent. Checking the free space fails a full tmpfs as early,
  // with the same ENOSPC; the writes then allocate the pages, in parallel with other work.
  struct statfs fs {};
  struct statvfs vfs {};
  if (fstatfs(fd_, &fs) == 0 && fs.f_type == TMPFS_MAGIC && fstatvfs(fd_, &vfs) == 0) {
    const uint64_t block = vfs.f_frsize != 0 ? vfs.f_frsize : 4096;
    // f_blocks 0: a tmpfs without a size limit.
    if (vfs.f_blocks != 0 && (size + block - 1) / block > vfs.f_bavail) {
      return write_error("cannot preallocate", 0, size, ENOSPC);
    }
    return resize(size);
  }
  int err;
  do {
    err = posix_fallocate(fd_, 0, static_cast<off_t>(size));
  } while (err == EINTR);
  if (err == 0) return Status::ok();
  // Filesystems without fallocate support: the size is still set, space is found later.
  if (err == EOPNOTSUPP || err == EINVAL) return resize(size);
  return write_error("cannot preallocate", 0, size, err);
}

Status OutputFile::commit() {
  if (fd_ < 0) return Status(ErrorCode::kInvalidArgument, path_ + ": output file is closed");
  Status status;
  if (fsync(fd_) != 0) {
    status = detail::errno_status(ErrorCode::kIo, path_,
                                  "cannot flush temporary file '" + temp_path_ + "'", errno);
  }
  // close() can report a deferred write error (NFS, quota): it must be checked too.
  const int close_rc = ::close(fd_);
  const int close_err = errno;
  fd_ = -1;
  if (status.is_ok() && close_rc != 0 && close_err != EINTR) {
    status = detail::errno_status(ErrorCode::kIo, path_,
                                  "cannot close temporary file '" + temp_path_ + "'", close_err);
  }
  if (status.is_ok() && std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    status = detail::errno_status(
        ErrorCode::kIo, path_, "cannot rename temporary file '" + temp_path_ + "' onto it", errno);
  }
  if (!status.is_ok()) {
    abandon();
    return status;
  }
  temp_path_.clear();
  sync_parent_directory(path_);
  return Status::ok();
}

Status write_file_atomic(const std::string& path, std::span<const uint8_t> bytes) {
  DF11_ASSIGN_OR_RETURN(OutputFile out, OutputFile::create(path));
  DF11_RETURN_IF_ERROR(out.append(bytes));
  return out.commit();
}

Status write_file_atomic(const std::string& path, std::string_view text) {
  return write_file_atomic(
      path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace df11
