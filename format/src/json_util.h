// Private to format/: JSON helpers shared by the safetensors header and the df11 metadata.
//
// Parsing: nlohmann keeps the last of duplicate object keys without a word; the safetensors
// format (spec 6.3 rules D1, D2) and the df11 metadata (spec 5.3) forbid duplicates, so parsing
// goes through a SAX handler that rejects a key its object already has. It also bounds nesting
// depth, so that a hostile header cannot make the DOM arbitrarily deep.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "df11/status.h"

namespace df11::detail {

struct StrictJsonOptions {
  std::string what;                              // message prefix, e.g. the file name
  std::string top_level_noun = "key";            // "duplicate <noun> 'x'", e.g. "tensor name"
  ErrorCode syntax_error = ErrorCode::kBadJson;  // not JSON, bad UTF-8, too deep
  ErrorCode duplicate_top_level = ErrorCode::kBadJson;  // a key twice in the root object
  ErrorCode duplicate_nested = ErrorCode::kBadJson;     // a key twice in a nested object
  int max_depth = 16;         // containers nested deeper than this are rejected
  std::string ordered_child;  // if set, record the key order of this root member
  // More root keys than this stop the parse early with kResourceLimit (before the DOM of a
  // hostile header grows further).
  uint64_t max_top_level_keys = UINT64_MAX;
  std::string max_top_level_keys_name;  // the spec's name of the limit, e.g. "Max_Tensors"
};

struct StrictJson {
  nlohmann::json value;
  std::vector<std::string> top_level_keys;      // root object keys in document order
  std::vector<std::string> ordered_child_keys;  // keys of root[ordered_child], in order
};

// Parses `text` (which must be exactly one JSON value, with optional whitespace around it).
// Catches every nlohmann and allocation exception.
Result<StrictJson> parse_json_strict(std::span<const char> text, const StrictJsonOptions& opts);

// Appends key -> value to a JSON object without looking the key up first. ordered_json's
// own insert scans all keys (quadratic for a header of 100k tensors); callers guarantee
// uniqueness (they have already rejected duplicates).
inline void append_member(nlohmann::ordered_json& object, std::string key,
                          nlohmann::ordered_json value) {
  object.get_ref<nlohmann::ordered_json::object_t&>().emplace_back(std::move(key),
                                                                   std::move(value));
}

// "'name'" with control and non-ASCII bytes escaped, so messages stay one printable line.
std::string quote_name(std::string_view name);

}  // namespace df11::detail
