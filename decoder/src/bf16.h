// BF16 reassembly from the two stored parts of a weight (spec 2.1).
#pragma once

#include <cstdint>

namespace df11::detail {

// spec 2.1: sign_mantissa = sign (bit 7) | mantissa (bits 0..6); the exponent is bits 7..14.
inline uint16_t bf16_from_parts(uint8_t sign_mantissa, uint8_t exponent) {
  return static_cast<uint16_t>(((sign_mantissa & 0x80u) << 8) | (uint32_t{exponent} << 7) |
                               (sign_mantissa & 0x7Fu));
}

}  // namespace df11::detail
