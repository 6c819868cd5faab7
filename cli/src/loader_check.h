// What the dfloat11 Python loader will do with a folder's pattern_dict: for a group P it
// applies every key that fully matches P, and decodes the group into the weights of the
// sub-modules the key lists (or P's own weight for an empty list), split at split_positions.
// verify uses this to prove a folder loads as intended.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "df11/status.h"

namespace df11::app {

// The tensor names the loader decodes group `group_name` into, in order. kBadConfig naming
// the group if no key matches it, several keys match it, or a key is not a usable regex.
Result<std::vector<std::string>> loader_member_names(const nlohmann::ordered_json& pattern_dict,
                                                     const std::string& group_name);

}  // namespace df11::app
