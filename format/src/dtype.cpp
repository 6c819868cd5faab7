#include "df11/dtype.h"

#include <array>
#include <string>

#include "df11/checked_math.h"

namespace df11 {
namespace {

struct DtypeRow {
  Dtype dtype;
  const char* name;
  uint32_t bits;
};

// spec 6.2: names and element sizes, in Dtype order.
constexpr std::array<DtypeRow, kDtypeCount> kDtypeTable = {{
    {Dtype::kBool, "BOOL", 8},
    {Dtype::kU8, "U8", 8},
    {Dtype::kI8, "I8", 8},
    {Dtype::kI16, "I16", 16},
    {Dtype::kU16, "U16", 16},
    {Dtype::kF16, "F16", 16},
    {Dtype::kBF16, "BF16", 16},
    {Dtype::kI32, "I32", 32},
    {Dtype::kU32, "U32", 32},
    {Dtype::kF32, "F32", 32},
    {Dtype::kF64, "F64", 64},
    {Dtype::kI64, "I64", 64},
    {Dtype::kU64, "U64", 64},
    {Dtype::kF8E4M3, "F8_E4M3", 8},
    {Dtype::kF8E5M2, "F8_E5M2", 8},
    {Dtype::kF8E8M0, "F8_E8M0", 8},
    {Dtype::kF8E4M3Fnuz, "F8_E4M3FNUZ", 8},
    {Dtype::kF8E5M2Fnuz, "F8_E5M2FNUZ", 8},
    {Dtype::kF4, "F4", 4},
    {Dtype::kF6E2M3, "F6_E2M3", 6},
    {Dtype::kF6E3M2, "F6_E3M2", 6},
    {Dtype::kC64, "C64", 64},
}};

static_assert([] {
  for (int i = 0; i < kDtypeCount; ++i) {
    if (static_cast<int>(kDtypeTable[i].dtype) != i) return false;
  }
  return true;
}());

const DtypeRow& row(Dtype dtype) { return kDtypeTable[static_cast<size_t>(dtype)]; }

}  // namespace

std::optional<Dtype> parse_dtype(std::string_view name) {
  for (const DtypeRow& r : kDtypeTable) {
    if (name == r.name) return r.dtype;
  }
  return std::nullopt;
}

const char* dtype_name(Dtype dtype) { return row(dtype).name; }

uint32_t dtype_bits(Dtype dtype) { return row(dtype).bits; }

std::string shape_to_string(std::span<const uint64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Result<uint64_t> tensor_byte_size(Dtype dtype, std::span<const uint64_t> shape) {
  uint64_t elements = 0;
  uint64_t bits = 0;
  if (!checked_product(shape, &elements) || !checked_mul(elements, dtype_bits(dtype), &bits)) {
    return Status(ErrorCode::kOverflow, std::string("shape ") + shape_to_string(shape) + " of " +
                                            dtype_name(dtype) +
                                            ": element count or byte size overflows 64 bits");
  }
  if (bits % 8 != 0) {
    return Status(ErrorCode::kBadShape, std::string("shape ") + shape_to_string(shape) + " of " +
                                            dtype_name(dtype) + ": " + std::to_string(bits) +
                                            " bits is not a whole number of bytes");
  }
  return bits / 8;
}

}  // namespace df11
