// The GPU's XXH3_64bits (xxh3_kernel.cu) run on the host with the kernel's arithmetic
// (xxh3_core.h), block sums first and the scramble chains after, as the kernel orders them:
// for tests without a GPU, against libxxhash. Not fast.
#pragma once

#include <cstdint>
#include <span>

namespace df11::cuda {

// XXH3_64bits (seed 0) of `bytes`, with `secret` XXH3's default (df11::xxh3_default_secret).
uint64_t xxh3_64_emulated(std::span<const uint8_t> bytes, std::span<const uint8_t, 192> secret);

}  // namespace df11::cuda
