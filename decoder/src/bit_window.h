// MSB-first bit access to the encoded exponent stream (spec 3.4) for the fast decoder.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace df11::detail {

// The 64 stream bits starting at byte `byte`, first stream bit in bit 63. Bytes at and past
// `n_bytes` read as zero (spec 4.1), so any position is safe to ask for.
inline uint64_t load_be64_padded(const uint8_t* stream, uint64_t n_bytes, uint64_t byte) {
  if (byte + 8 <= n_bytes) [[likely]] {
    uint64_t w;
    std::memcpy(&w, stream + byte, 8);  // unaligned load
    if constexpr (std::endian::native == std::endian::little) w = __builtin_bswap64(w);
    return w;
  }
  uint64_t w = 0;
  for (uint64_t k = 0; k < 8; ++k) {
    w <<= 8;
    if (byte + k < n_bytes) w |= stream[byte + k];
  }
  return w;
}

// Stream bits from bit `pos` on, left-aligned: at least 57 of the 64 are valid.
inline uint64_t peek_bits(const uint8_t* stream, uint64_t n_bytes, uint64_t pos) {
  return load_be64_padded(stream, n_bytes, pos >> 3) << (pos & 7);
}

}  // namespace df11::detail
