// A command's output folder, built as the sibling "<OUT_DIR>.df11-tmp-<pid>" and renamed onto
// OUT_DIR only once complete, so that an error or a signal never leaves partial output and
// --force never destroys the old folder before the new one exists.
#pragma once

#include <filesystem>

#include "df11/status.h"

namespace df11::app {

class StagingDir {
 public:
  // Checks OUT_DIR up front (kExists if it exists and !force, so no work is wasted) and
  // creates the temp folder (a stale one of the same name, left by a killed process with
  // this pid, is removed first). kNotFound if OUT_DIR's parent folder does not exist.
  static Result<StagingDir> create(const std::filesystem::path& out_dir, bool force);

  StagingDir() = default;
  StagingDir(StagingDir&& other) noexcept;
  StagingDir& operator=(StagingDir&& other) noexcept;
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  ~StagingDir();  // removes the temp folder unless committed

  const std::filesystem::path& path() const { return temp_; }  // write here
  const std::filesystem::path& target() const { return target_; }

  // Moves the temp folder onto OUT_DIR. Without force: atomic, fails with kExists if OUT_DIR
  // appeared meanwhile. With force: the old OUT_DIR is renamed away, the new one renamed in,
  // then the old one deleted; if the second rename fails the old one is put back.
  Status commit();

  // Deletes the temp folder now (also done by the destructor).
  void abandon();

 private:
  std::filesystem::path target_;
  std::filesystem::path temp_;
  bool force_ = false;
  bool active_ = false;
};

// Sibling path "<path>.<tag>-<pid>" used for temp and old folders.
std::filesystem::path sibling_path(const std::filesystem::path& path, const char* tag);

// kInvalidArgument if `out` is `in`, or one contains the other (compressing a folder into
// itself, or restoring over the input, would destroy the input with --force).
Status check_distinct_folders(const std::filesystem::path& in, const std::filesystem::path& out);

}  // namespace df11::app
