#include "mapped_writer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace df11::app {

namespace {

#ifndef MADV_POPULATE_WRITE
constexpr int kMadvPopulateWrite = 23;  // Linux 5.14 (uapi/asm-generic/mman-common.h)
#else
constexpr int kMadvPopulateWrite = MADV_POPULATE_WRITE;
#endif

// Pieces of one write, at file offsets that are multiples of this: page-aligned, so no two
// tasks of one write touch the same page.
constexpr uint64_t kPiece = uint64_t{1} << 20;

uint64_t page_size() {
  static const uint64_t size = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return size;
}

std::string range_text(uint64_t offset, uint64_t size) {
  return "bytes [" + std::to_string(offset) + ", " + std::to_string(offset + size) + ")";
}

}  // namespace

Result<MappedWriter> MappedWriter::open(const OutputFile& file, uint64_t size) {
  if (size == 0) return MappedWriter(file.path(), nullptr, 0);
  const int fd = ::open(file.temp_path().c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return Status(ErrorCode::kIo, file.path() + ": cannot open temporary file '" +
                                      file.temp_path() + "' to map it: " + std::strerror(errno));
  }
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping keeps the file
  if (base == MAP_FAILED) {
    return Status(ErrorCode::kIo, file.path() + ": cannot map " + std::to_string(size) +
                                      " bytes for writing: " + std::strerror(err));
  }
  return MappedWriter(file.path(), static_cast<uint8_t*>(base), size);
}

MappedWriter::MappedWriter(MappedWriter&& other) noexcept
    : path_(std::move(other.path_)), base_(other.base_), size_(other.size_) {
  other.base_ = nullptr;
  other.size_ = 0;
}

MappedWriter::~MappedWriter() {
  if (base_ != nullptr) ::munmap(base_, size_);
}

bool MappedWriter::supported() {
  static const bool ok = [] {
    // An anonymous shared page: EINVAL means the kernel does not know the advice.
    void* p = ::mmap(nullptr, page_size(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                     -1, 0);
    if (p == MAP_FAILED) return false;
    const bool known = ::madvise(p, page_size(), kMadvPopulateWrite) == 0;
    ::munmap(p, page_size());
    return known;
  }();
  return ok;
}

Status MappedWriter::populate_and_copy(uint64_t offset, std::span<const uint8_t> bytes) const {
  const uint64_t page = page_size();
  const uint64_t first = offset / page * page;
  const uint64_t end = std::min(size_, (offset + bytes.size() + page - 1) / page * page);
  // The pages are allocated here, where a full filesystem is an error return; the copy below
  // then only writes pages that exist, and cannot fault for space (SIGBUS).
  while (::madvise(base_ + first, end - first, kMadvPopulateWrite) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    // EFAULT: the fault that allocates a page failed as a write would with SIGBUS; on tmpfs
    // that is a full filesystem (or a size limit).
    return Status(ErrorCode::kIo,
                  path_ + ": cannot allocate the pages of " + range_text(offset, bytes.size()) +
                      ": " +
                      (err == EFAULT ? std::string("no space left on the filesystem (") +
                                           std::strerror(ENOSPC) + ")"
                                     : std::string(std::strerror(err))));
  }
  std::memcpy(base_ + offset, bytes.data(), bytes.size());
  // The file keeps the pages; this process need not map them any more.
  ::madvise(base_ + first, end - first, MADV_DONTNEED);
  return Status::ok();
}

Status MappedWriter::write(uint64_t offset, std::span<const uint8_t> bytes) const {
  if (bytes.empty()) return Status::ok();
  if (offset > size_ || bytes.size() > size_ - offset) {
    return Status(ErrorCode::kInvalidArgument,
                  path_ + ": " + range_text(offset, bytes.size()) + " lie beyond the " +
                      std::to_string(size_) + " mapped bytes");
  }
  const uint64_t end = offset + bytes.size();
  const uint64_t first_piece = offset / kPiece;
  const uint64_t pieces = (end - 1) / kPiece - first_piece + 1;
  std::atomic<bool> failed{false};
  std::mutex mutex;
  Status first_error;
  tbb::parallel_for(tbb::blocked_range<uint64_t>(0, pieces, 1),
                    [&](const tbb::blocked_range<uint64_t>& r) {
                      for (uint64_t k = r.begin(); k != r.end(); ++k) {
                        if (failed.load(std::memory_order_relaxed)) return;
                        const uint64_t from = std::max(offset, (first_piece + k) * kPiece);
                        const uint64_t to = std::min(end, (first_piece + k + 1) * kPiece);
                        Status s = populate_and_copy(from, bytes.subspan(from - offset, to - from));
                        if (!s) {
                          std::lock_guard<std::mutex> lock(mutex);
                          if (!failed.exchange(true)) first_error = std::move(s);
                          return;
                        }
                      }
                    });
  return first_error;
}

}  // namespace df11::app
