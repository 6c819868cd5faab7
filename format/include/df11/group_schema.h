// The schema of a DF11 group's six stored tensors (spec 3.2): their names, dtypes, ranks and
// order, defined here once. The reader (group_tensors.h), the writers (pipeline/), the df11
// metadata's `stored` checksums (spec 5.3) and the tests all take them from this table.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "df11/dtype.h"

namespace df11 {

// spec 3.2: the six stored tensors, in the order a group writes them (luts first).
enum class GroupTensor : uint8_t {
  kLuts,
  kEncodedExponent,
  kSignMantissa,
  kOutputPositions,
  kGaps,
  kSplitPositions,
};
inline constexpr size_t kGroupTensorCount = 6;

struct GroupTensorSpec {
  GroupTensor id;
  std::string_view suffix;  // ".luts": a group with module path P stores "P" + suffix
  Dtype dtype;
  size_t rank;  // luts is [n_luts, 256]; the others are one-dimensional

  // "luts": the suffix without its dot, also the tensor's key in `stored` (spec 5.3).
  constexpr std::string_view name() const { return suffix.substr(1); }
};

// spec 3.2 table: U8 everywhere except split_positions (I64, for torch.tensor_split).
inline constexpr std::array<GroupTensorSpec, kGroupTensorCount> kGroupTensors = {{
    {GroupTensor::kLuts, ".luts", Dtype::kU8, 2},
    {GroupTensor::kEncodedExponent, ".encoded_exponent", Dtype::kU8, 1},
    {GroupTensor::kSignMantissa, ".sign_mantissa", Dtype::kU8, 1},
    {GroupTensor::kOutputPositions, ".output_positions", Dtype::kU8, 1},
    {GroupTensor::kGaps, ".gaps", Dtype::kU8, 1},
    {GroupTensor::kSplitPositions, ".split_positions", Dtype::kI64, 1},
}};

constexpr const GroupTensorSpec& group_tensor(GroupTensor t) {
  return kGroupTensors[static_cast<size_t>(t)];
}

// "P.luts" etc. for the group with module path `group`.
inline std::string group_tensor_name(std::string_view group, GroupTensor t) {
  std::string name(group);
  name += group_tensor(t).suffix;
  return name;
}

}  // namespace df11
