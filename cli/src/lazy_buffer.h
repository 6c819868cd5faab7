// A large zero-filled scratch buffer whose pages cost memory only once touched and can be
// given back range by range: the compressor encodes a group of gigabytes into it while
// writing out and releasing the finished part after every step, so resident memory follows
// the step size, not the group size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "df11/status.h"

namespace df11::app {

class LazyBuffer {
 public:
  // Reserves `size` bytes of address space (anonymous, MAP_NORESERVE); reads give zeros.
  static Result<LazyBuffer> create(uint64_t size, const char* what);

  LazyBuffer() = default;
  LazyBuffer(LazyBuffer&& other) noexcept;
  LazyBuffer& operator=(LazyBuffer&& other) noexcept;
  LazyBuffer(const LazyBuffer&) = delete;
  LazyBuffer& operator=(const LazyBuffer&) = delete;
  ~LazyBuffer();

  std::span<uint8_t> span() const { return {data_, static_cast<size_t>(size_)}; }
  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

  // Returns the pages lying entirely inside [begin, end) to the system; they read as zero
  // afterwards. Partial pages at either end are kept (a neighbour may still write there).
  void release(uint64_t begin, uint64_t end) const;

 private:
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t mapped_ = 0;  // bytes mapped (size_ rounded up, at least one page)
};

}  // namespace df11::app
