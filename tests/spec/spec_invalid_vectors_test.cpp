// Every invalid vector of spec/vectors/invalid (spec/DF11.md section 9) must fail with its
// expected error, whichever stage finds it: the container (6.3), the df11 metadata (5.3, 5.4),
// the stored checksums (5.2), structural validation (3.8) or decoding (4.5). Decode-time
// faults must be reported by both CPU decoders alike. Messages must name the file.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "df11/decoder.h"
#include "spec_pipeline.h"
#include "spec_vectors.h"

namespace df11::test {
namespace {

class InvalidVector : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    name_ = GetParam();
    const nlohmann::json j = read_spec_json("invalid", name_);
    ASSERT_TRUE(j.is_object()) << name_ << ".json";
    expected_ = j.at("expected_error").get<std::string>();
    vector_stage_ = j.value("stage", "");
    file_name_ = name_ + ".safetensors";
  }

  void expect_error(const std::string& who, const Status& s) const {
    ASSERT_FALSE(s.is_ok()) << who << " accepted " << file_name_ << " (" << vector_stage_
                            << " fault), expected " << expected_;
    EXPECT_EQ(error_code_name(s.code()), expected_)
        << who << ": " << s.to_string() << " (vector stage: " << vector_stage_ << ")";
    EXPECT_NE(s.message().find(file_name_), std::string::npos)
        << who << ": the message does not name the file: " << s.message();
  }

  std::string name_, expected_, vector_stage_, file_name_;
};

TEST_P(InvalidVector, FailsWithItsError) {
  std::unique_ptr<LoadedShard> shard;
  const StageStatus loaded = load_shard(spec_vector_path("invalid", name_, ".safetensors"), &shard);
  if (!loaded.status.is_ok()) {
    expect_error(loaded.stage, loaded.status);
    return;
  }
  ASSERT_FALSE(shard->groups.empty()) << "no group to validate";
  for (size_t g = 0; g < shard->groups.size(); ++g) {
    const GroupView view = shard->view(g);
    Result<GroupInfo> info = validate_group(view, shard->what(g));
    if (!info.is_ok()) {
      expect_error("validate_group", info.status());
      return;
    }
  }
  // Valid structure: the fault is in the stream; both decoders must find it.
  const GroupView view = shard->view(0);
  std::vector<uint16_t> out(view.n_elements());
  expect_error("decode_group_reference", decode_group_reference(view, out, shard->what(0)));
  expect_error("decode_group", decode_group(view, out, shard->what(0)));
}

INSTANTIATE_TEST_SUITE_P(Spec, InvalidVector, ::testing::ValuesIn(spec_vector_names("invalid")),
                         [](const auto& info) { return spec_test_name(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(InvalidVector);

}  // namespace
}  // namespace df11::test
