#include "df11/group_tensors.h"

#include <optional>
#include <unordered_map>

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

// The module path P of a group's "<P>.encoded_exponent" tensor; nothing for other tensors.
std::optional<std::string_view> group_name_of(std::string_view tensor_name) {
  const std::string_view suffix = group_tensor(GroupTensor::kEncodedExponent).suffix;
  if (tensor_name.size() <= suffix.size() || !tensor_name.ends_with(suffix)) return std::nullopt;
  return tensor_name.substr(0, tensor_name.size() - suffix.size());
}

}  // namespace

std::array<const TensorInfo*, kGroupTensorCount> GroupTensors::all() const {
  std::array<const TensorInfo*, kGroupTensorCount> out{};
  for (size_t i = 0; i < kGroupTensorCount; ++i) out[i] = this->*kFields[i];
  return out;
}

Result<GroupTensors> find_group_tensors(std::string_view name, std::string_view where,
                                        const GroupTensorLookup& lookup) {
  GroupTensors g;
  g.name = std::string(name);
  for (const GroupTensorSpec& slot : kGroupTensors) {
    const std::string tensor_name = group_tensor_name(g.name, slot.id);
    DF11_ASSIGN_OR_RETURN(const FoundTensor found, lookup(tensor_name));
    const TensorInfo* t = found.tensor;
    if (t == nullptr) {
      return Status(ErrorCode::kBadGroup, std::string(where) + ": group " + quote_name(name) +
                                              ": stored tensor " + quote_name(tensor_name) +
                                              " is missing");
    }
    const std::string ctx = std::string(found.file) + ": tensor " + quote_name(tensor_name);
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

Result<GroupTensors> find_group_tensors(const SafetensorsHeader& header, std::string_view name) {
  return find_group_tensors(name, header.file_name, [&](const std::string& tensor_name) {
    return Result<FoundTensor>(FoundTensor{header.find(tensor_name), header.file_name});
  });
}

Result<std::vector<GroupTensors>> enumerate_groups(const SafetensorsHeader& header) {
  std::vector<GroupTensors> groups;
  for (const TensorInfo& t : header.tensors) {
    const auto name = group_name_of(t.name);
    if (!name) continue;
    DF11_ASSIGN_OR_RETURN(GroupTensors g, find_group_tensors(header, *name));
    groups.push_back(std::move(g));
  }
  return groups;
}

Result<std::vector<FolderGroup>> enumerate_folder_groups(
    std::span<const SafetensorsHeader* const> headers, std::string_view where) {
  struct Held {
    size_t file = 0;
    const TensorInfo* tensor = nullptr;
    size_t other_file = SIZE_MAX;  // a second header holding the same name
  };
  std::unordered_map<std::string_view, Held> held;
  for (size_t f = 0; f < headers.size(); ++f) {
    for (const TensorInfo& t : headers[f]->tensors) {
      const auto [it, added] = held.emplace(t.name, Held{f, &t});
      if (!added && it->second.other_file == SIZE_MAX) it->second.other_file = f;
    }
  }
  std::vector<FolderGroup> groups;
  for (size_t f = 0; f < headers.size(); ++f) {
    for (const TensorInfo& t : headers[f]->tensors) {
      const auto name = group_name_of(t.name);
      if (!name) continue;
      const auto lookup = [&](const std::string& tensor_name) -> Result<FoundTensor> {
        const auto it = held.find(tensor_name);
        if (it == held.end()) return FoundTensor{};
        const Held& h = it->second;
        if (h.other_file != SIZE_MAX) {
          return Status(ErrorCode::kDuplicateName,
                        std::string(where) + ": group " + quote_name(*name) + ": stored tensor " +
                            quote_name(tensor_name) + " is in both " +
                            quote_name(headers[h.file]->file_name) + " and " +
                            quote_name(headers[h.other_file]->file_name));
        }
        return FoundTensor{h.tensor, headers[h.file]->file_name};
      };
      FolderGroup g;
      DF11_ASSIGN_OR_RETURN(g.tensors, find_group_tensors(*name, where, lookup));
      const auto tensors = g.tensors.all();
      for (size_t i = 0; i < kGroupTensorCount; ++i) g.file_of[i] = held.at(tensors[i]->name).file;
      groups.push_back(std::move(g));
    }
  }
  return groups;
}

GroupView group_view(const GroupTensors& group, std::span<const uint8_t> file_bytes) {
  std::array<std::span<const uint8_t>, kGroupTensorCount> each;
  each.fill(file_bytes);
  return group_view(group, each);
}

GroupView group_view(const GroupTensors& group,
                     const std::array<std::span<const uint8_t>, kGroupTensorCount>& file_bytes) {
  const auto tensors = group.all();
  std::array<std::span<const uint8_t>, kGroupTensorCount> spans;
  for (size_t i = 0; i < kGroupTensorCount; ++i) {
    spans[i] = file_bytes[i].subspan(static_cast<size_t>(tensors[i]->file_offset),
                                     static_cast<size_t>(tensors[i]->byte_size()));
  }
  return GroupView{spans[0], spans[1], spans[2], spans[3], spans[4], spans[5]};
}

}  // namespace df11
