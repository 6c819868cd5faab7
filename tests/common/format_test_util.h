// Test helpers for the format module: hand-built safetensors files and scratch directories.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "df11/group.h"
#include "df11/status.h"

namespace df11::test {

// A safetensors file from raw header text (not padded, not validated) and `data_bytes`
// bytes of data (byte i = i & 0xff). `declared_length` overrides the length prefix.
inline std::vector<uint8_t> make_safetensors(std::string_view header, uint64_t data_bytes,
                                             uint64_t declared_length = UINT64_MAX) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes);
  store_le64(out.data(), declared_length == UINT64_MAX ? header.size() : declared_length);
  std::copy(header.begin(), header.end(), out.begin() + 8);
  for (uint64_t i = 0; i < data_bytes; ++i) out[8 + header.size() + i] = static_cast<uint8_t>(i);
  return out;
}

inline std::span<const uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// A fresh directory under TMPDIR, removed with its contents on destruction.
class ScratchDir {
 public:
  ScratchDir() {
    const char* base = getenv("TMPDIR");
    std::string templ = std::string(base != nullptr ? base : "/tmp") + "/df11-format-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = templ;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Names of everything in the directory, sorted.
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path_)) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::filesystem::path path_;
};

// Asserts that `status` failed with `code` and that its message contains every fragment
// (fragments are copied into std::strings, so temporaries such as (a + b).c_str() are safe).
#define EXPECT_STATUS(status_expr, code_value, ...)                                         \
  do {                                                                                      \
    const ::df11::Status df11_st_ = (status_expr);                                          \
    EXPECT_EQ(df11_st_.code(), (code_value)) << df11_st_.to_string();                       \
    for (const std::string& df11_frag_ : std::initializer_list<std::string>{__VA_ARGS__}) { \
      EXPECT_NE(df11_st_.message().find(df11_frag_), std::string::npos)                     \
          << "message lacks \"" << df11_frag_ << "\": " << df11_st_.message();              \
    }                                                                                       \
  } while (0)

}  // namespace df11::test
