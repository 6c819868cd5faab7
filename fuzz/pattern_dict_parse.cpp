// Fuzz target: pattern_dict keys (from an untrusted config.json, spec 7.3) through SafeRegex.
//
// Properties: any bytes either compile or are refused with kBadConfig (no crash, no unbounded
// recursion); a compiled pattern matches a fixed set of module paths and the input itself in
// time linear in the text (libFuzzer's -timeout catches a regression); and the input read as
// a module path, escaped as df11 writes keys (python_regex_escape), compiles and fully
// matches exactly that path.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "df11/safe_regex.h"
#include "df11/utf8.h"
#include "fuzz_check.h"
#include "python_regex.h"

namespace {

constexpr std::string_view kPaths[] = {
    "",
    "lm_head",
    "model.embed_tokens",
    "model.layers.0",
    "model.layers.31",
    "model.layers.7.mlp",
    "transformer.h.11",
    "a",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab",
    "caf\xc3\xa9\n",
    "\xff\xfe",
};

// Escaping at most doubles a path; keep the escaped key within Max_Pattern_Bytes.
constexpr size_t kMaxEscapedPath = df11::app::kMaxPatternBytes / 2;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using df11::app::SafeRegex;
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  auto re = SafeRegex::compile(input);
  if (re.is_ok()) {
    FUZZ_CHECK(re->state_count() <= df11::app::kMaxNfaStates);
    for (std::string_view path : kPaths) (void)re->full_match(path);
    (void)re->full_match(input.substr(0, 512));
  } else {
    FUZZ_CHECK(re.status().code() == df11::ErrorCode::kBadConfig ||
               re.status().code() == df11::ErrorCode::kResourceLimit);
    FUZZ_CHECK(!re.status().message().empty());
  }

  // Module paths are JSON strings (UTF-8).
  if (size <= kMaxEscapedPath && df11::app::is_valid_utf8(input)) {
    const std::string key = df11::app::python_regex_escape(input);
    auto escaped = SafeRegex::compile(key);
    FUZZ_CHECK(escaped.is_ok());
    FUZZ_CHECK(escaped->full_match(input));
    FUZZ_CHECK(!escaped->full_match(std::string(input) + "x"));
    if (!input.empty()) FUZZ_CHECK(!escaped->full_match(input.substr(1)));
  }
  return 0;
}
