// What the dfloat11 Python loader will do with a folder's pattern_dict: for a group P it
// applies every key that fully matches P, and decodes the group into the weights of the
// sub-modules the key lists (or P's own weight for an empty list), split at split_positions.
// verify uses this to prove a folder loads as intended. Keys come from an untrusted
// config.json: they are compiled with SafeRegex (linear-time matching) under spec 7.3's limits.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "df11/safe_regex.h"
#include "df11/status.h"

namespace df11::app {

// spec 7.3: Max_Pattern_Dict_States, automaton states of all keys together (each key has at
// most Max_Nfa_States), so that 10,000 keys cannot take gigabytes.
inline constexpr size_t kMaxPatternDictStates = size_t{1} << 20;

class LoaderPatterns {
 public:
  // Compiles every key. kBadConfig "<file_name>: pattern_dict key '<key>': <why>" for a key
  // outside the subset SafeRegex accepts or over a limit, or a member list that is not a list
  // of strings; kBadConfig past Max_Pattern_Dict_States.
  static Result<LoaderPatterns> compile(const nlohmann::ordered_json& pattern_dict,
                                        const std::string& file_name);

  // The tensor names the loader decodes group `group_name` into, in order. kBadConfig naming
  // the group if no key matches it or several keys match it.
  Result<std::vector<std::string>> member_names(const std::string& group_name) const;

 private:
  struct Entry {
    std::string key;
    SafeRegex regex;
    std::vector<std::string> members;  // sub-module paths; empty: the module itself
  };
  std::vector<Entry> entries_;
};

}  // namespace df11::app
