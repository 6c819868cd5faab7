// Fuzz target: parse_df11_metadata() on arbitrary text.
//
// Properties: parsing never crashes or leaks; every error names the file; whatever parses
// serializes (deterministically) and parses back to an equal Df11Metadata.
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "df11/metadata.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  df11::Result<df11::Df11Metadata> m = df11::parse_df11_metadata(text, "fuzz.safetensors");
  if (!m.is_ok()) {
    FUZZ_CHECK(m.status().code() != df11::ErrorCode::kOk);
    FUZZ_CHECK(m.status().message().rfind("fuzz.safetensors: df11 metadata", 0) == 0);
    return 0;
  }
  // Parsed strings are valid UTF-8, so serializing cannot fail.
  df11::Result<std::string> text2 = df11::serialize_df11_metadata(*m);
  FUZZ_CHECK(text2.is_ok());
  df11::Result<df11::Df11Metadata> back = df11::parse_df11_metadata(*text2, "round_trip");
  FUZZ_CHECK(back.is_ok());
  FUZZ_CHECK(*back == *m);
  df11::Result<std::string> text3 = df11::serialize_df11_metadata(*back);
  FUZZ_CHECK(text3.is_ok() && *text3 == *text2);
  return 0;
}
