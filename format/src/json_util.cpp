#include "json_util.h"

#include <cstdio>
#include <new>
#include <unordered_set>

namespace df11::detail {
namespace {

// Thrown from the parser callback to stop parsing at the first violation; never escapes
// parse_json_strict().
struct StrictJsonAbort {
  Status status;
};

}  // namespace

std::string quote_name(std::string_view name) {
  // Long names are cut: a message must stay readable even for a hostile 1 MB key.
  constexpr size_t kMaxShown = 200;
  std::string out = "'";
  for (size_t i = 0; i < name.size() && i < kMaxShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7f || c == '\\' || c == '\'') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (name.size() > kMaxShown) out += "...";
  return out + "'";
}

Result<StrictJson> parse_json_strict(std::span<const char> text, const StrictJsonOptions& opts) {
  StrictJson out;
  // One key set per open object; arrays need no set but count toward depth.
  std::vector<std::unordered_set<std::string>> open_objects;
  std::string current_top_key;

  auto callback = [&](int depth, nlohmann::json::parse_event_t event,
                      nlohmann::json& parsed) -> bool {
    using E = nlohmann::json::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start:
        if (depth >= opts.max_depth) {
          throw StrictJsonAbort{Status(opts.syntax_error,
                                       opts.what + ": JSON nested deeper than " +
                                           std::to_string(opts.max_depth) + " levels")};
        }
        if (event == E::object_start) open_objects.emplace_back();
        break;
      case E::object_end:
        open_objects.pop_back();
        break;
      case E::key: {
        std::string key = parsed.get<std::string>();
        const bool top = open_objects.size() == 1 && depth == 1;
        if (!open_objects.back().insert(key).second) {
          if (top) {
            throw StrictJsonAbort{Status(opts.duplicate_top_level,
                                         opts.what + ": duplicate " + opts.top_level_noun + " " +
                                             quote_name(key))};
          }
          throw StrictJsonAbort{Status(opts.duplicate_nested,
                                       opts.what + ": duplicate key " + quote_name(key) +
                                           " inside " + quote_name(current_top_key))};
        }
        if (top) {
          current_top_key = key;
          out.top_level_keys.push_back(std::move(key));
        } else if (depth == 2 && open_objects.size() == 2 && !opts.ordered_child.empty() &&
                   current_top_key == opts.ordered_child) {
          out.ordered_child_keys.push_back(std::move(key));
        }
        break;
      }
      default:
        break;
    }
    return true;
  };

  try {
    out.value = nlohmann::json::parse(text.data(), text.data() + text.size(), callback,
                                      /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const StrictJsonAbort& abort) {
    return abort.status;
  } catch (const nlohmann::json::exception& e) {
    return Status(opts.syntax_error, opts.what + ": invalid JSON: " + e.what());
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, opts.what + ": out of memory while parsing JSON");
  }
  return out;
}

}  // namespace df11::detail
