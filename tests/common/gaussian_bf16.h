// N(0, sigma^2) weights rounded to BF16 (round to nearest even), from a fixed seed: the
// execution layouts' tests' trained-like weights.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace df11 {

inline std::vector<uint16_t> gaussian_bf16(size_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<uint16_t> out(n);
  for (auto& w : out) {
    const float f = dist(rng);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    w = static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
  }
  return out;
}

}  // namespace df11
