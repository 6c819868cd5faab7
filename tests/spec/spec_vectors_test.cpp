// The vector directories themselves (spec/DF11.md section 9): present, non-empty and complete,
// so that the per-vector tests cannot pass by finding nothing.
#include "spec_vectors.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace df11::test {
namespace {

TEST(SpecVectorDirectories, ValidVectorsExist) {
  const auto names = spec_vector_names("valid");
  ASSERT_FALSE(names.empty()) << "no valid vectors under " << spec_vectors_dir() / "valid"
                              << " (run python3 tools/spec_vectors.py)";
  // The spec's worked examples (section 8) must be among them.
  const std::set<std::string> have(names.begin(), names.end());
  EXPECT_TRUE(have.count("worked_tiny"));
  EXPECT_TRUE(have.count("worked_multilevel"));
}

TEST(SpecVectorDirectories, InvalidVectorsExist) {
  ASSERT_FALSE(spec_vector_names("invalid").empty())
      << "no invalid vectors under " << spec_vectors_dir() / "invalid";
}

// Every vector has its description, and every valid one its expected output; no stray files.
TEST(SpecVectorDirectories, EveryVectorIsComplete) {
  for (const std::string kind : {"valid", "invalid"}) {
    const auto names = spec_vector_names(kind);
    std::set<std::string> expected_files;
    for (const std::string& name : names) {
      expected_files.insert(name + ".safetensors");
      expected_files.insert(name + ".json");
      if (kind == "valid") expected_files.insert(name + ".expected.bin");
      const nlohmann::json j = read_spec_json(kind, name);
      ASSERT_TRUE(j.is_object()) << kind << "/" << name << ".json is missing or not JSON";
      EXPECT_TRUE(j.contains("description")) << kind << "/" << name;
      if (kind == "valid") {
        for (const char* key : {"group", "n_elements", "sha256_of_expected", "canonical"}) {
          EXPECT_TRUE(j.contains(key)) << kind << "/" << name << ".json lacks " << key;
        }
      } else {
        EXPECT_TRUE(j.contains("expected_error")) << kind << "/" << name;
      }
    }
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(spec_vectors_dir() / kind, ec)) {
      EXPECT_TRUE(expected_files.count(entry.path().filename().string()))
          << "stray file " << entry.path();
    }
  }
}

}  // namespace
}  // namespace df11::test
