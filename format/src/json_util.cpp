#include "json_util.h"

#include <cstdio>
#include <cstring>
#include <new>

namespace df11::detail {
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

namespace {

// A SAX handler that builds the DOM like nlohmann's own, plus the checks of
// parse_json_strict(). (nlohmann's callback parser would do for the checks, but after every
// nested object it rescans the whole parent for discarded values: quadratic in the number of
// tensors of a header.)
class StrictDomBuilder {
 public:
  using json = nlohmann::json;

  StrictDomBuilder(const StrictJsonOptions& opts, StrictJson* out) : opts_(opts), out_(out) {}

  const Status& status() const { return status_; }

  bool null() { return add(nullptr); }
  bool boolean(bool v) { return add(v); }
  bool number_integer(json::number_integer_t v) { return add(v); }
  bool number_unsigned(json::number_unsigned_t v) { return add(v); }
  bool number_float(json::number_float_t v, const json::string_t&) { return add(v); }
  bool string(json::string_t& v) { return add(std::move(v)); }
  bool binary(json::binary_t& v) { return add(json::binary(std::move(v))); }

  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }

  bool key(json::string_t& k) {
    json& object = *stack_.back();
    const bool top = stack_.size() == 1;
    if (object.contains(k)) {
      if (top) {
        return fail(opts_.duplicate_top_level,
                    opts_.what + ": duplicate " + opts_.top_level_noun + " " + quote_name(k));
      }
      return fail(opts_.duplicate_nested, opts_.what + ": duplicate key " + quote_name(k) +
                                              " inside " + quote_name(current_top_key_));
    }
    if (top) {
      if (out_->top_level_keys.size() >= opts_.max_top_level_keys) {
        return fail(ErrorCode::kResourceLimit,
                    opts_.what + ": more than " + std::to_string(opts_.max_top_level_keys) +
                        " top-level keys (" + opts_.max_top_level_keys_name + ")");
      }
      current_top_key_ = k;
      out_->top_level_keys.push_back(k);
    } else if (stack_.size() == 2 && !opts_.ordered_child.empty() &&
               current_top_key_ == opts_.ordered_child) {
      out_->ordered_child_keys.push_back(k);
    }
    pending_key_ = std::move(k);
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const json::exception& e) {
    return fail(opts_.syntax_error, opts_.what + ": invalid JSON: " + e.what());
  }

 private:
  // Places a finished value in the open container (or as the root) and returns it.
  json* place(json&& v) {
    if (stack_.empty()) {
      out_->value = std::move(v);
      return &out_->value;
    }
    json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.get_ref<json::array_t&>().push_back(std::move(v));
      return &parent.get_ref<json::array_t&>().back();
    }
    // key() has rejected duplicates, so this always inserts.
    auto it = parent.get_ref<json::object_t&>().emplace(std::move(pending_key_), std::move(v));
    return &it.first->second;
  }

  template <typename T>
  bool add(T&& v) {
    place(json(std::forward<T>(v)));
    return true;
  }

  bool open(json&& container) {
    if (stack_.size() >= static_cast<size_t>(opts_.max_depth)) {
      return fail(opts_.syntax_error, opts_.what + ": JSON nested deeper than " +
                                          std::to_string(opts_.max_depth) + " levels");
    }
    // A pointer into the parent stays valid while this container is open: the parent does
    // not change until the container closes.
    stack_.push_back(place(std::move(container)));
    return true;
  }

  bool fail(ErrorCode code, std::string message) {
    if (status_.is_ok()) status_ = Status(code, std::move(message));
    return false;
  }

  const StrictJsonOptions& opts_;
  StrictJson* out_;
  std::vector<json*> stack_;
  std::string pending_key_;
  std::string current_top_key_;
  Status status_;
};

}  // namespace

Result<StrictJson> parse_json_strict(std::span<const char> text, const StrictJsonOptions& opts) {
  // nlohmann's lexer takes a NUL byte for the end of input and would ignore everything after
  // it; JSON text can never contain a raw NUL (inside strings it must be escaped).
  // (memchr must not see a null pointer, even for zero bytes.)
  const void* nul = text.empty() ? nullptr : std::memchr(text.data(), 0, text.size());
  if (nul != nullptr) {
    return Status(opts.syntax_error,
                  opts.what + ": invalid JSON: NUL byte at offset " +
                      std::to_string(static_cast<const char*>(nul) - text.data()));
  }
  StrictJson out;
  try {
    StrictDomBuilder builder(opts, &out);
    const bool ok = nlohmann::json::sax_parse(text.data(), text.data() + text.size(), &builder,
                                              nlohmann::json::input_format_t::json,
                                              /*strict=*/true, /*ignore_comments=*/false);
    if (!ok) {
      if (!builder.status().is_ok()) return builder.status();
      return Status(opts.syntax_error, opts.what + ": invalid JSON");
    }
  } catch (const nlohmann::json::exception& e) {
    return Status(opts.syntax_error, opts.what + ": invalid JSON: " + e.what());
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, opts.what + ": out of memory while parsing JSON");
  }
  return out;
}

}  // namespace df11::detail
