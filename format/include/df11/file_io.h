// Files: read-only memory maps for input, atomic temp-file-and-rename for output.
//
// Every error is a Status naming the file and carrying the errno text ("No space left on
// device"). POSIX only.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "df11/status.h"

namespace df11 {

// A read-only, private memory map of a whole regular file. Move-only; unmaps on destruction.
// An empty file maps to an empty span (mmap cannot map 0 bytes).
class MappedFile {
 public:
  // kNotFound if the path does not exist; kIo for any other failure (not a regular file,
  // permission, mmap).
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  const uint8_t* data() const { return data_; }
  std::span<const uint8_t> span() const { return {data_, static_cast<size_t>(size_)}; }

  // Drops the pages covering [offset, offset + length) from this process's resident set once
  // the caller is done with them (compressing a 100 GB model must not keep it all resident).
  // The range is widened to page boundaries: this is safe because the mapping is read-only
  // and file-backed, so a later access to a neighbouring tensor just faults the page back in
  // from the page cache. Best effort: failures are ignored. Out-of-range parts are clipped.
  void advise_dontneed(uint64_t offset, uint64_t length) const;
  // Hints that [offset, offset + length) will be read soon (sequentially). Best effort.
  void advise_willneed(uint64_t offset, uint64_t length) const;
  // Maps the pages covering [offset, offset + length) now, in one call (MADV_POPULATE_READ,
  // Linux 5.14), for a reader about to read them all: the faults otherwise map them 64 KiB
  // at a time (12-15% of the CPU time of a pass over a tmpfs file measured on a 2-core EPYC).
  // Best effort: a kernel without it, or a failure, leaves the faults to do it.
  void advise_populate(uint64_t offset, uint64_t length) const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

// An output file written under "<path>.df11-tmp-<pid>" and renamed onto `path` by commit(),
// so that readers never see a half-written file and a failed run leaves nothing behind.
// The destructor (or abandon()) deletes the temp file unless commit() succeeded. Move-only.
//
// A write past RLIMIT_FSIZE raises SIGXFSZ, whose default action kills the process; programs
// using OutputFile should ignore SIGXFSZ once at start-up (the df11 CLI does, in its signal
// set-up) so that the write fails with EFBIG and is reported as kIo "File too large".
class OutputFile {
 public:
  // Creates the temp file exclusively (kIo if it already exists: another process writing the
  // same output, or a stale temp file to remove).
  static Result<OutputFile> create(const std::string& path);

  OutputFile() = default;
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();

  const std::string& path() const { return path_; }  // final path
  const std::string& temp_path() const { return temp_path_; }

  // Writes all of `bytes` at `offset` (retries short writes and EINTR). Thread-safe for
  // disjoint ranges (pwrite does not move a shared file position).
  Status pwrite_all(uint64_t offset, std::span<const uint8_t> bytes) const;
  // Writes at the append position (the end of the last append), then advances it.
  Status append(std::span<const uint8_t> bytes);
  // Sets the file size (ftruncate).
  Status resize(uint64_t size) const;
  // Reserves `size` bytes of disk up front (posix_fallocate) so that a full disk fails here,
  // early, with ENOSPC; falls back to resize() where the filesystem cannot preallocate. On
  // tmpfs it checks the free space and resizes (fallocate would allocate every page there).
  Status preallocate(uint64_t size) const;
  // fsync, close, rename onto path(), then fsync the directory (best effort). After success
  // the object is empty; on failure the temp file is removed.
  Status commit();
  // Closes and deletes the temp file now (also done by the destructor).
  void abandon();

 private:
  OutputFile(std::string path, std::string temp_path, int fd)
      : path_(std::move(path)), temp_path_(std::move(temp_path)), fd_(fd) {}
  Status write_error(const char* what, uint64_t offset, uint64_t size, int err) const;

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  uint64_t append_offset_ = 0;
};

// Writes `bytes` to `path` atomically (OutputFile + commit).
Status write_file_atomic(const std::string& path, std::span<const uint8_t> bytes);
Status write_file_atomic(const std::string& path, std::string_view text);

// Reads a whole (small) file; kResourceLimit if it is larger than max_bytes.
Result<std::string> read_file_to_string(const std::string& path, uint64_t max_bytes);

}  // namespace df11
