// Element types of safetensors tensors (spec 6.2), with their names and sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "df11/status.h"

namespace df11 {

// Every dtype the safetensors format defines. The numbering is internal (never stored):
// files carry the names returned by dtype_name().
enum class Dtype : uint8_t {
  kBool,
  kU8,
  kI8,
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kF64,
  kI64,
  kU64,
  kF8E4M3,      // "F8_E4M3"
  kF8E5M2,      // "F8_E5M2"
  kF8E8M0,      // "F8_E8M0" (OCP MX scale)
  kF8E4M3Fnuz,  // "F8_E4M3FNUZ"
  kF8E5M2Fnuz,  // "F8_E5M2FNUZ"
  kF4,          // "F4" (OCP MXFP4, 4 bits per element)
  kF6E2M3,      // "F6_E2M3" (OCP MXFP6, 6 bits per element)
  kF6E3M2,      // "F6_E3M2"
  kC64,         // "C64" (complex, two F32 parts)
};

inline constexpr int kDtypeCount = static_cast<int>(Dtype::kC64) + 1;

// "BF16" -> Dtype::kBF16. Names are case-sensitive, exactly as in the safetensors format.
std::optional<Dtype> parse_dtype(std::string_view name);

// The name stored in files, e.g. "F8_E4M3". Never null.
const char* dtype_name(Dtype dtype);

// Bits per element: 4 (F4), 6 (F6_*), 8, 16, 32 or 64.
uint32_t dtype_bits(Dtype dtype);

// Bytes of a tensor of this dtype and shape (spec 6.3 rules T5..T7): product(shape) * bits / 8.
// kOverflow if the product overflows uint64; kBadShape if a sub-byte dtype does not fill
// a whole number of bytes. Messages name the dtype and shape; callers add file and tensor.
Result<uint64_t> tensor_byte_size(Dtype dtype, std::span<const uint64_t> shape);

// "[4096, 11008]" for messages.
std::string shape_to_string(std::span<const uint64_t> shape);

}  // namespace df11
