// The spec's test vectors (spec/DF11.md section 9) for any test binary: where they are, which
// exist, and their files. Header-only and free of df11 libraries, so that every module's tests
// may include it (tests/common/*.cpp is linked into all of them).
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace df11::test {

// spec/vectors/ of the source tree.
inline std::filesystem::path spec_vectors_dir() {
  return std::filesystem::path(DF11_SOURCE_DIR) / "spec" / "vectors";
}

// Names (file stems) of the vectors of one kind, "valid" or "invalid", sorted: every
// <kind>/<name>.safetensors. Empty if the directory is missing.
inline std::vector<std::string> spec_vector_names(const std::string& kind) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(spec_vectors_dir() / kind, ec)) {
    const std::filesystem::path& p = entry.path();
    if (entry.is_regular_file() && p.extension() == ".safetensors") {
      names.push_back(p.stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// <kind>/<name><suffix>, e.g. spec_vector_path("valid", "worked_tiny", ".expected.bin").
inline std::filesystem::path spec_vector_path(const std::string& kind, const std::string& name,
                                              const std::string& suffix) {
  return spec_vectors_dir() / kind / (name + suffix);
}

// Whole file; empty if it cannot be read (tests then fail on the missing content).
inline std::vector<uint8_t> read_spec_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

// The vector's .json description; a discarded (null) value if it is missing or not JSON.
inline nlohmann::json read_spec_json(const std::string& kind, const std::string& name) {
  const std::vector<uint8_t> bytes = read_spec_file(spec_vector_path(kind, name, ".json"));
  return nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
}

// gtest-safe test name for a vector name (letters, digits, '_').
inline std::string spec_test_name(std::string name) {
  for (char& c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!ok) c = '_';
  }
  return name;
}

}  // namespace df11::test
