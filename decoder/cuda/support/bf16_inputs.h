// Deterministic BF16 inputs for GPU tests and benchmarks: values in (-1, 1), never zero, both
// signs (a GEMV over zeros would prove little). Header-only and free of df11 internals, so a
// test that links only the public library (tests/capi) can use it too.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace df11::cuda::support {

inline std::vector<uint16_t> deterministic_bf16(uint64_t n, uint64_t seed) {
  std::vector<uint16_t> x(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 12345;  // xorshift64 state, never 0
  for (uint16_t& v : x) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    const float f = (static_cast<float>(s >> 41) + 0.5f) / static_cast<float>(1u << 23) - 1.0f;
    uint32_t u;
    std::memcpy(&u, &f, 4);
    v = static_cast<uint16_t>(u >> 16);  // truncation keeps |v| in (0, 1)
  }
  return x;
}

}  // namespace df11::cuda::support
