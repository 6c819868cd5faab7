#include "xxh3_emulation.h"

#include <cstring>
#include <vector>

#include "xxh3_core.h"

namespace df11::cuda {

uint64_t xxh3_64_emulated(std::span<const uint8_t> bytes, std::span<const uint8_t, 192> secret) {
  using namespace detail;
  const uint8_t* in = bytes.data();
  const uint64_t len = bytes.size();
  if (len <= kXxh3ShortMax) return xxh3_short(in, len, secret.data());
  // The kernel's first pass: every full block's eight sums, independently.
  const uint64_t blocks = xxh3_full_blocks(len);
  std::vector<uint64_t> sums(blocks * kXxh3Lanes);
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = in + b * kXxh3Block;
    const auto load = [&](size_t i) {
      Xxh3Pair w;
      std::memcpy(&w.even, block + 16 * i, 8);
      std::memcpy(&w.odd, block + 16 * i + 8, 8);
      return w;
    };
    for (size_t l = 0; l < kXxh3Lanes; ++l) {
      uint64_t keys[kXxh3StripesPerBlock];
      xxh3_lane_keys(secret.data(), l, keys);
      sums[b * kXxh3Lanes + l] = xxh3_block_sum(load, l, keys);
    }
  }
  // Its second: one chain per accumulator.
  uint64_t acc[kXxh3Lanes];
  for (size_t l = 0; l < kXxh3Lanes; ++l) {
    acc[l] = xxh3_initial(l);
    const uint64_t key = xxh3_scramble_key(secret.data(), l);
    for (uint64_t b = 0; b < blocks; ++b) {
      acc[l] = xxh3_scramble(acc[l], sums[b * kXxh3Lanes + l], key);
    }
  }
  return xxh3_long_finish(acc, in, len, secret.data());
}

}  // namespace df11::cuda
