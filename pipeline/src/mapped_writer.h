// Writes an output file through a shared mapping of it, each write's pages spread over TBB's
// threads. A tmpfs file takes one write() at a time (the inode lock), so one file's pwrite()s
// do not go faster with more threads (16-vCPU Xeon, 3 GB into one new /dev/shm file: 2.65,
// 2.36, 2.77 GB/s by 1, 4, 16 threads), while page faults into a shared mapping take no such
// lock (1.32, 3.52, 4.58 GB/s; records/compress-scaling/h21g). A mapped page costs about twice
// a written one in CPU time (a fault, a zeroing and a page-table entry per 4 KiB), so this pays
// only where a file has several threads of its own.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "df11/file_io.h"
#include "df11/status.h"

namespace df11::app {

class MappedWriter {
 public:
  // Maps the first `size` bytes of `file`'s temporary file, which must already be that large
  // (OutputFile::preallocate). `file` must outlive the writer. kIo naming the file when the
  // mapping fails.
  static Result<MappedWriter> open(const OutputFile& file, uint64_t size);

  MappedWriter(MappedWriter&& other) noexcept;
  MappedWriter& operator=(MappedWriter&&) = delete;
  MappedWriter(const MappedWriter&) = delete;
  MappedWriter& operator=(const MappedWriter&) = delete;
  ~MappedWriter();  // unmaps; the file keeps what was written

  // Copies `bytes` to [offset, offset + size) in 1 MiB pieces as parallel TBB tasks (blocks
  // until all are done). Each piece's pages are allocated first with MADV_POPULATE_WRITE, so
  // that a full filesystem is a returned error (kIo, ENOSPC, naming the file and the range),
  // never SIGBUS, and dropped from this process's page tables after the copy (the file keeps
  // them; the resident set stays flat). Thread-safe for disjoint ranges.
  Status write(uint64_t offset, std::span<const uint8_t> bytes) const;

  // Whether this kernel populates shared mappings (MADV_POPULATE_WRITE, Linux 5.14): false
  // where the writer cannot keep its no-signal promise, and the caller should pwrite().
  static bool supported();

 private:
  MappedWriter(std::string path, uint8_t* base, uint64_t size)
      : path_(std::move(path)), base_(base), size_(size) {}
  Status populate_and_copy(uint64_t offset, std::span<const uint8_t> bytes) const;

  std::string path_;  // for messages: the final path
  uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace df11::app
