#include "df11/loader_check.h"

namespace df11::app {

Result<LoaderPatterns> LoaderPatterns::compile(const nlohmann::ordered_json& pattern_dict,
                                               const std::string& file_name) {
  LoaderPatterns patterns;
  size_t states = 0;
  for (const auto& [key, value] : pattern_dict.items()) {
    const std::string where =
        file_name + ": pattern_dict key '" + key.substr(0, 200) + (key.size() > 200 ? "...'" : "'");
    auto regex = SafeRegex::compile(key);
    if (!regex) return regex.status().with_context(where);
    states += regex->state_count();
    if (states > kMaxPatternDictStates) {
      return Status(ErrorCode::kBadConfig,
                    where + ": the keys need more than Max_Pattern_Dict_States " +
                        std::to_string(kMaxPatternDictStates) + " automaton states together");
    }
    Entry entry{key, std::move(regex).value(), {}};
    if (!value.is_array()) {
      return Status(ErrorCode::kBadConfig, where + ": the value is not a list of module names");
    }
    for (const auto& sub : value) {
      if (!sub.is_string()) {
        return Status(ErrorCode::kBadConfig, where + ": the value is not a list of module names");
      }
      entry.members.push_back(sub.get<std::string>());
    }
    patterns.entries_.push_back(std::move(entry));
  }
  return patterns;
}

Result<std::vector<std::string>> LoaderPatterns::member_names(const std::string& group_name) const {
  std::vector<const Entry*> matches;
  for (const Entry& entry : entries_) {
    if (entry.regex.full_match(group_name)) matches.push_back(&entry);
  }
  if (matches.empty()) {
    return Status(ErrorCode::kBadConfig, "group '" + group_name +
                                             "': no pattern_dict key matches it, so the "
                                             "dfloat11 loader would not decode it");
  }
  if (matches.size() > 1) {
    return Status(ErrorCode::kBadConfig, "group '" + group_name + "': pattern_dict keys '" +
                                             matches[0]->key + "' and '" + matches[1]->key +
                                             "' both match it (the loader applies both)");
  }
  std::vector<std::string> names;
  if (matches[0]->members.empty()) {
    names.push_back(group_name + ".weight");
  } else {
    for (const std::string& sub : matches[0]->members) {
      names.push_back(group_name + "." + sub + ".weight");
    }
  }
  return names;
}

}  // namespace df11::app
