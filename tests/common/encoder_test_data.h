// Deterministic BF16 test inputs for encoder tests (and any other module's tests): realistic
// weight tensors, every codable pattern, and degenerate distributions. Header-only.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace df11::testing {

// SplitMix64: tiny, seedable, identical on every platform.
class TestRng {
 public:
  explicit TestRng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t bound) { return next() % bound; }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double normal() {                                                           // Box-Muller
    const double u1 = 1.0 - uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

// float -> BF16 with round-to-nearest-even (finite inputs).
inline uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

inline uint32_t bf16_exponent(uint16_t w) { return (w >> 7) & 0xFF; }

// Like a trained layer: N(0, stddev^2), plus a fraction of outliers up to +-64 * stddev.
inline std::vector<uint16_t> gaussian_bf16(uint64_t n, double stddev, uint64_t seed,
                                           double outlier_fraction = 1e-4) {
  TestRng rng(seed);
  std::vector<uint16_t> w(n);
  for (uint64_t i = 0; i < n; ++i) {
    double x = rng.normal() * stddev;
    if (rng.uniform() < outlier_fraction) x = (rng.uniform() * 128.0 - 64.0) * stddev;
    w[i] = to_bf16(static_cast<float>(x));
  }
  return w;
}

// All 61,440 patterns whose exponent is codable (< 240), in increasing order.
inline std::vector<uint16_t> all_codable_bf16() {
  std::vector<uint16_t> w;
  for (uint32_t v = 0; v < 65536; ++v) {
    if (bf16_exponent(static_cast<uint16_t>(v)) < 240) w.push_back(static_cast<uint16_t>(v));
  }
  return w;
}

// Random patterns whose exponent is drawn from `exponents` with the given weights, with
// random sign and mantissa.
inline std::vector<uint16_t> bf16_with_exponents(uint64_t n, const std::vector<uint32_t>& exponents,
                                                 const std::vector<double>& weights,
                                                 uint64_t seed) {
  TestRng rng(seed);
  std::vector<double> cumulative(weights.size());
  double total = 0;
  for (size_t i = 0; i < weights.size(); ++i) cumulative[i] = (total += weights[i]);
  std::vector<uint16_t> w(n);
  for (uint64_t i = 0; i < n; ++i) {
    const double u = rng.uniform() * total;
    size_t k = 0;
    while (k + 1 < cumulative.size() && cumulative[k] <= u) ++k;
    const uint32_t sign_mantissa = static_cast<uint32_t>(rng.below(256));
    w[i] = static_cast<uint16_t>(((sign_mantissa & 0x80) << 8) | (exponents[k] << 7) |
                                 (sign_mantissa & 0x7F));
  }
  return w;
}

}  // namespace df11::testing
