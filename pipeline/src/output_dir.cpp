#include "output_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>

namespace df11::app {
namespace fs = std::filesystem;

namespace {

Status io_error(const fs::path& path, const std::string& what, int err) {
  return Status(ErrorCode::kIo, path.string() + ": " + what + ": " + std::strerror(err));
}

// Removes a folder tree; failures are swallowed (cleanup paths must not mask the real error).
void remove_tree(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

// Without a trailing separator, so that "out/" and "out" name the same sibling.
fs::path normalized(const fs::path& path) {
  fs::path p = path.lexically_normal();
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();
  return p;
}

}  // namespace

fs::path sibling_path(const fs::path& path, const char* tag) {
  const fs::path p = normalized(path);
  return fs::path(p.string() + "." + tag + "-" + std::to_string(::getpid()));
}

Status check_distinct_folders(const fs::path& in, const fs::path& out) {
  std::error_code ec1, ec2;
  const fs::path a = fs::weakly_canonical(in, ec1);
  const fs::path b = fs::weakly_canonical(out, ec2);
  if (ec1 || ec2) return Status::ok();  // reported later by whoever opens them
  auto contains = [](const fs::path& outer, const fs::path& inner) {
    auto o = outer.begin(), i = inner.begin();
    for (; o != outer.end() && !o->empty(); ++o, ++i) {
      if (i == inner.end() || *o != *i) return false;
    }
    return true;
  };
  if (contains(a, b) || contains(b, a)) {
    return Status(ErrorCode::kInvalidArgument, out.string() +
                                                   ": output folder must not be the input folder " +
                                                   in.string() + " nor inside it (or contain it)");
  }
  return Status::ok();
}

Result<StagingDir> StagingDir::create(const fs::path& out_dir, bool force) {
  StagingDir dir;
  dir.target_ = normalized(out_dir);
  dir.force_ = force;
  if (dir.target_.empty()) {
    return Status(ErrorCode::kInvalidArgument, "output folder: empty path");
  }
  std::error_code ec;
  const auto status = fs::symlink_status(dir.target_, ec);
  if (fs::exists(status) && !force) {
    return Status(ErrorCode::kExists,
                  dir.target_.string() + ": output exists (use --force to replace it)");
  }
  const fs::path parent = dir.target_.has_parent_path() ? dir.target_.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec)) {
    // The nearest part of the path that exists says what is wrong: a file where a folder
    // should be ("/dev/full/x"), or a folder that is missing.
    for (fs::path up = parent; !up.empty(); up = up.parent_path()) {
      if (fs::exists(up, ec)) {
        if (!fs::is_directory(up, ec)) {
          return Status(ErrorCode::kInvalidArgument,
                        dir.target_.string() + ": " + up.string() +
                            ": not a folder (the output goes into a new folder OUT_DIR)");
        }
        break;
      }
      if (up == up.parent_path()) break;
    }
    return Status(ErrorCode::kNotFound,
                  dir.target_.string() + ": parent folder " + parent.string() + " does not exist");
  }
  dir.temp_ = sibling_path(dir.target_, "df11-tmp");
  remove_tree(dir.temp_);  // stale, from a killed process that had our pid
  if (::mkdir(dir.temp_.c_str(), 0777) != 0) {
    return io_error(dir.temp_, "cannot create temp folder", errno);
  }
  dir.active_ = true;
  return dir;
}

StagingDir::StagingDir(StagingDir&& other) noexcept
    : target_(std::move(other.target_)),
      temp_(std::move(other.temp_)),
      force_(other.force_),
      active_(std::exchange(other.active_, false)) {}

StagingDir& StagingDir::operator=(StagingDir&& other) noexcept {
  if (this != &other) {
    abandon();
    target_ = std::move(other.target_);
    temp_ = std::move(other.temp_);
    force_ = other.force_;
    active_ = std::exchange(other.active_, false);
  }
  return *this;
}

StagingDir::~StagingDir() { abandon(); }

void StagingDir::abandon() {
  if (!active_) return;
  active_ = false;
  remove_tree(temp_);
}

Status StagingDir::commit() {
  if (!active_) return Status(ErrorCode::kInternal, "StagingDir::commit on an inactive folder");
  // RENAME_NOREPLACE: plain rename() would silently replace an empty folder created meanwhile.
  if (::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_NOREPLACE) == 0) {
    active_ = false;
    return Status::ok();
  }
  const int err = errno;
  if (err != EEXIST && err != ENOTEMPTY) {
    return io_error(target_, "cannot rename " + temp_.string() + " onto it", err);
  }
  if (!force_) {
    return Status(ErrorCode::kExists,
                  target_.string() + ": output appeared while working (use --force to replace it)");
  }
  const fs::path old = sibling_path(target_, "df11-old");
  remove_tree(old);
  if (::rename(target_.c_str(), old.c_str()) != 0) {
    return io_error(target_, "cannot move the existing output away to " + old.string(), errno);
  }
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int rename_err = errno;
    ::rename(old.c_str(), target_.c_str());  // put the old output back
    return io_error(target_, "cannot rename " + temp_.string() + " onto it", rename_err);
  }
  active_ = false;
  remove_tree(old);
  return Status::ok();
}

}  // namespace df11::app
