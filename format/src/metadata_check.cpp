// Checks of the df11 metadata against the shard that carries it: spec 5.4.
#include <unordered_map>

#include "df11/metadata.h"
#include "json_util.h"

namespace df11 {

using detail::quote_name;

Result<GroupTensors> check_group_against_header(const GroupMeta& group,
                                                const SafetensorsHeader& header) {
  DF11_ASSIGN_OR_RETURN(GroupTensors g, find_group_tensors(header, group.name));
  // C1: one sign_mantissa byte per weight.
  if (g.sign_mantissa->n_elements != group.n_elements) {
    return Status(ErrorCode::kBadGroup,
                  header.file_name + ": tensor " + quote_name(g.sign_mantissa->name) + ": " +
                      std::to_string(g.sign_mantissa->n_elements) +
                      " bytes, but the df11 metadata gives group " + quote_name(group.name) + " " +
                      std::to_string(group.n_elements) + " elements");
  }
  // C2: one split position between consecutive members.
  if (g.split_positions->n_elements + 1 != group.members.size()) {
    return Status(ErrorCode::kBadGroup,
                  header.file_name + ": tensor " + quote_name(g.split_positions->name) + ": " +
                      std::to_string(g.split_positions->n_elements) +
                      " split positions, but the df11 metadata gives group " +
                      quote_name(group.name) + " " + std::to_string(group.members.size()) +
                      " members (needs members - 1)");
  }
  return g;
}

bool is_guard_tensor(const TensorInfo& t) {
  return t.dtype == Dtype::kU8 && t.shape.size() == 1 && t.shape[0] == 0;
}

const MemberMeta* guarded_member(const GroupMeta& group) {
  for (const MemberMeta& m : group.members) {
    if (m.alias_of.empty()) return &m;
  }
  return nullptr;
}

Result<std::vector<GroupTensors>> check_metadata_against_header(const Df11Metadata& metadata,
                                                                const SafetensorsHeader& header) {
  std::vector<GroupTensors> groups;
  groups.reserve(metadata.groups.size());
  // C3: every header tensor has exactly one owner: a group, the raw list, or a group's guard.
  std::unordered_map<std::string_view, std::string_view> owner;  // tensor -> group name
  owner.reserve(header.tensors.size());
  for (const GroupMeta& gm : metadata.groups) {
    DF11_ASSIGN_OR_RETURN(GroupTensors g, check_group_against_header(gm, header));
    for (const TensorInfo* t : g.all()) owner.emplace(t->name, gm.name);
    groups.push_back(std::move(g));
  }
  for (const RawTensorMeta& raw : metadata.tensors) {
    const TensorInfo* t = header.find(raw.name);
    if (t == nullptr) {
      return Status(ErrorCode::kBadMetadata, header.file_name + ": df11 metadata lists tensor " +
                                                 quote_name(raw.name) +
                                                 " as stored unchanged, but the file has no such "
                                                 "tensor");
    }
    const auto [it, inserted] = owner.emplace(t->name, std::string_view());
    if (!inserted) {
      return Status(ErrorCode::kBadMetadata,
                    header.file_name + ": df11 metadata lists tensor " + quote_name(raw.name) +
                        " as stored unchanged, but it is a stored tensor of group " +
                        quote_name(it->second));
    }
  }
  // spec 6.5: a tensor under the name of a group's guarded member is that group's guard.
  for (size_t i = 0; i < metadata.groups.size(); ++i) {
    const MemberMeta* m = guarded_member(metadata.groups[i]);
    const TensorInfo* t = m == nullptr ? nullptr : header.find(m->name);
    if (t == nullptr) continue;
    if (!is_guard_tensor(*t) || !owner.emplace(t->name, metadata.groups[i].name).second) {
      return Status(ErrorCode::kBadMetadata, header.file_name + ": tensor " + quote_name(t->name) +
                                                 " has the name of a member of group " +
                                                 quote_name(metadata.groups[i].name) +
                                                 " but is not its guard (U8, shape [0])");
    }
    groups[i].guard = t;
  }
  for (const TensorInfo& t : header.tensors) {
    if (owner.find(t.name) == owner.end()) {
      return Status(ErrorCode::kBadMetadata,
                    header.file_name + ": tensor " + quote_name(t.name) +
                        " is neither a stored tensor of a group in the df11 metadata, nor listed "
                        "in its 'tensors', nor a group's guard");
    }
  }
  return groups;
}

}  // namespace df11
