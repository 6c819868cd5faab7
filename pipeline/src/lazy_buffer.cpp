#include "lazy_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace df11::app {
namespace {

uint64_t page_size() {
  static const uint64_t size = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

}  // namespace

Result<LazyBuffer> LazyBuffer::create(uint64_t size, const char* what) {
  LazyBuffer buffer;
  const uint64_t page = page_size();
  if (size > (uint64_t{1} << 48)) {
    return Status(ErrorCode::kResourceLimit,
                  std::string(what) + ": " + std::to_string(size) + " bytes is too large");
  }
  buffer.mapped_ = std::max<uint64_t>(page, (size + page - 1) / page * page);
  void* p = ::mmap(nullptr, buffer.mapped_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return Status(ErrorCode::kResourceLimit, std::string(what) + ": cannot reserve " +
                                                 std::to_string(size) +
                                                 " bytes: " + std::strerror(errno));
  }
  buffer.data_ = static_cast<uint8_t*>(p);
  buffer.size_ = size;
  return buffer;
}

LazyBuffer::LazyBuffer(LazyBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

LazyBuffer& LazyBuffer::operator=(LazyBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, mapped_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

LazyBuffer::~LazyBuffer() {
  if (data_ != nullptr) ::munmap(data_, mapped_);
}

}  // namespace df11::app
