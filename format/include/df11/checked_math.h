// Overflow-checked arithmetic for sizes read from untrusted files (spec 6.3).
//
// Every size that comes from a header (shape dimensions, offsets, counts) goes through these
// before it is used to index or allocate: a file must not be able to wrap a uint64_t.
#pragma once

#include <cstdint>
#include <span>

namespace df11 {

// *out = a + b; false (and *out unspecified) on uint64 overflow.
inline bool checked_add(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

// *out = a * b; false (and *out unspecified) on uint64 overflow.
inline bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

// *out = product of dims (1 for an empty shape: a scalar); false on overflow. A zero dimension
// makes the product 0 whatever the others are, but the others still must not overflow
// together: [2^40, 2^40, 0] is rejected, as the reference safetensors implementation does.
inline bool checked_product(std::span<const uint64_t> dims, uint64_t* out) {
  uint64_t p = 1;
  for (uint64_t d : dims) {
    if (!checked_mul(p, d, &p)) return false;
  }
  *out = p;
  return true;
}

}  // namespace df11
