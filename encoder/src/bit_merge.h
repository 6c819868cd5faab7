// Merging one chunk's bits into a bit array that neighbouring chunks write concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <span>

namespace df11 {

// ORs bits [bit_begin, bit_end) into `dst` (MSB-first bit order: bit k is bit 7 - k % 8 of
// byte k / 8). `src` holds them at the same positions relative to byte bit_begin / 8, with
// zeros outside the range. Only the first and last byte can hold another writer's bits, so
// only they are merged atomically; the caller zero-filled `dst` and each byte in between
// belongs to this range alone, so it is copied. Requires bit_begin < bit_end <= 8*dst.size().
inline void merge_bits(std::span<uint8_t> dst, uint64_t bit_begin, uint64_t bit_end,
                       const uint8_t* src) {
  const uint64_t first = bit_begin / 8;
  const uint64_t last = (bit_end - 1) / 8;
  std::atomic_ref<uint8_t>(dst[first]).fetch_or(src[0], std::memory_order_relaxed);
  if (last == first) return;
  if (last > first + 1) std::memcpy(dst.data() + first + 1, src + 1, last - first - 1);
  std::atomic_ref<uint8_t>(dst[last]).fetch_or(src[last - first], std::memory_order_relaxed);
}

}  // namespace df11
