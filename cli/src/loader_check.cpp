#include "loader_check.h"

#include <regex>

namespace df11::app {

Result<std::vector<std::string>> loader_member_names(const nlohmann::ordered_json& pattern_dict,
                                                     const std::string& group_name) {
  std::vector<std::string> keys;
  const nlohmann::ordered_json* list = nullptr;
  for (const auto& [key, value] : pattern_dict.items()) {
    try {
      // pattern_dict keys use the part of Python's syntax that ECMAScript shares (escapes,
      // \d, (?:...) alternations); regex_match is Python's fullmatch.
      if (std::regex_match(group_name, std::regex(key, std::regex::ECMAScript))) {
        keys.push_back(key);
        list = &value;
      }
    } catch (const std::regex_error& e) {
      return Status(ErrorCode::kBadConfig, "config.json: pattern_dict key '" + key +
                                               "' is not a usable regex: " + e.what());
    }
  }
  if (keys.empty()) {
    return Status(ErrorCode::kBadConfig, "group '" + group_name +
                                             "': no pattern_dict key matches it, so the "
                                             "dfloat11 loader would not decode it");
  }
  if (keys.size() > 1) {
    return Status(ErrorCode::kBadConfig, "group '" + group_name + "': pattern_dict keys '" +
                                             keys[0] + "' and '" + keys[1] +
                                             "' both match it (the loader applies both)");
  }
  std::vector<std::string> names;
  if (list->empty()) {
    names.push_back(group_name + ".weight");
  } else {
    for (const auto& sub : *list)
      names.push_back(group_name + "." + sub.get<std::string>() + ".weight");
  }
  return names;
}

}  // namespace df11::app
