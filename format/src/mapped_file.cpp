#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "df11/file_io.h"
#include "posix_error.h"
#include "posix_file.h"

namespace df11 {
namespace {

uint64_t page_size() {
  static const uint64_t size = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return size;
}

// Clips [offset, offset + length) to [0, size) and widens it to whole pages.
bool page_range(uint64_t size, uint64_t offset, uint64_t length, uint64_t* begin, uint64_t* end) {
  if (offset >= size || length == 0) return false;
  const uint64_t last = length > size - offset ? size : offset + length;
  const uint64_t page = page_size();
  *begin = offset / page * page;
  *end = (last + page - 1) / page * page;
  return true;
}

}  // namespace

Result<MappedFile> MappedFile::open(const std::string& path) {
  DF11_ASSIGN_OR_RETURN(detail::OpenedFile opened, detail::open_regular_file(path));
  MappedFile file;
  file.path_ = path;
  file.size_ = opened.size;
  if (file.size_ > 0) {
    void* p = mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, opened.fd.get(), 0);
    if (p == MAP_FAILED) return detail::errno_status(ErrorCode::kIo, path, "cannot mmap", errno);
    file.data_ = static_cast<const uint8_t*>(p);
  }
  // The mapping keeps the file alive; the descriptor closes when `opened` goes.
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
}

void MappedFile::advise_dontneed(uint64_t offset, uint64_t length) const {
  uint64_t begin = 0, end = 0;
  if (data_ == nullptr || !page_range(size_, offset, length, &begin, &end)) return;
  // The mapping itself is page-aligned, so begin is too; end may pass size_ only within the
  // last page, which the mapping covers.
  madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED);
}

void MappedFile::advise_populate(uint64_t offset, uint64_t length) const {
#ifndef MADV_POPULATE_READ
  constexpr int MADV_POPULATE_READ = 22;  // Linux 5.14; older headers lack it
#endif
  uint64_t begin = 0, end = 0;
  if (data_ == nullptr || !page_range(size_, offset, length, &begin, &end)) return;
  madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_POPULATE_READ);
}

void MappedFile::advise_willneed(uint64_t offset, uint64_t length) const {
  uint64_t begin = 0, end = 0;
  if (data_ == nullptr || !page_range(size_, offset, length, &begin, &end)) return;
  madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_WILLNEED);
}

}  // namespace df11
