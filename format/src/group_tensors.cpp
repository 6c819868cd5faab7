#include "df11/group_tensors.h"

#include "json_util.h"

namespace df11 {
namespace {

using detail::quote_name;

// GroupTensors' field for each schema entry, in kGroupTensors order.
constexpr const TensorInfo* GroupTensors::*kFields[kGroupTensorCount] = {
    &GroupTensors::luts,          &GroupTensors::encoded_exponent,
    &GroupTensors::sign_mantissa, &GroupTensors::output_positions,
    &GroupTensors::gaps,          &GroupTensors::split_positions,
};

}  // namespace

std::array<const TensorInfo*, kGroupTensorCount> GroupTensors::all() const {
  std::array<const TensorInfo*, kGroupTensorCount> out{};
  for (size_t i = 0; i < kGroupTensorCount; ++i) out[i] = this->*kFields[i];
  return out;
}

Result<GroupTensors> find_group_tensors(const SafetensorsHeader& header, std::string_view name) {
  GroupTensors g;
  g.name = std::string(name);
  const std::string group_ctx = header.file_name + ": group " + quote_name(name);
  for (const GroupTensorSpec& slot : kGroupTensors) {
    const std::string tensor_name = group_tensor_name(g.name, slot.id);
    const TensorInfo* t = header.find(tensor_name);
    if (t == nullptr) {
      return Status(ErrorCode::kBadGroup,
                    group_ctx + ": stored tensor " + quote_name(tensor_name) + " is missing");
    }
    const std::string ctx = header.file_name + ": tensor " + quote_name(tensor_name);
    if (t->dtype != slot.dtype) {
      return Status(ErrorCode::kBadDtype, ctx + ": dtype " + dtype_name(t->dtype) +
                                              ", a DF11 group stores it as " +
                                              dtype_name(slot.dtype));
    }
    if (slot.rank == 2) {
      if (t->shape.size() != 2 || t->shape[1] != kLutRowSize || t->shape[0] == 0) {
        return Status(ErrorCode::kBadShape, ctx + ": shape " + shape_to_string(t->shape) +
                                                ", a DF11 lookup table is [n_luts, 256] with "
                                                "n_luts >= 1");
      }
    } else if (t->shape.size() != 1) {
      return Status(ErrorCode::kBadShape,
                    ctx + ": shape " + shape_to_string(t->shape) + " is not one-dimensional");
    }
    g.*kFields[static_cast<size_t>(slot.id)] = t;
  }
  return g;
}

Result<std::vector<GroupTensors>> enumerate_groups(const SafetensorsHeader& header) {
  std::vector<GroupTensors> groups;
  const std::string_view suffix = group_tensor(GroupTensor::kEncodedExponent).suffix;
  for (const TensorInfo& t : header.tensors) {
    const std::string_view n = t.name;
    if (n.size() <= suffix.size() || !n.ends_with(suffix)) continue;
    DF11_ASSIGN_OR_RETURN(GroupTensors g,
                          find_group_tensors(header, n.substr(0, n.size() - suffix.size())));
    groups.push_back(std::move(g));
  }
  return groups;
}

GroupView group_view(const GroupTensors& group, std::span<const uint8_t> file_bytes) {
  auto span_of = [&](const TensorInfo* t) {
    return file_bytes.subspan(static_cast<size_t>(t->file_offset),
                              static_cast<size_t>(t->byte_size()));
  };
  return GroupView{span_of(group.luts),          span_of(group.encoded_exponent),
                   span_of(group.sign_mantissa), span_of(group.output_positions),
                   span_of(group.gaps),          span_of(group.split_positions)};
}

}  // namespace df11
