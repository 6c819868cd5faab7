// A large zero-filled scratch buffer whose pages cost memory only once touched (the
// compressor's per-group scratch; the stand-in file that checks a recorded header).
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

 private:
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t mapped_ = 0;  // bytes mapped (size_ rounded up, at least one page)
};

}  // namespace df11::app
