// df11 inspect failure modes: exit codes and messages that name the file (and group).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_test_model.h"
#include "df11/safetensors.h"
#include "tools_checkpoint.h"
#include "tools_inspect_run.h"

namespace df11::test {
namespace {

void write_good_and_bad(const clitest::TempDir& dir) {
  const auto w = gaussian_bf16(4096, 0.1f, 1);
  write_tools_safetensors((dir / "model-00001-of-00002.safetensors").string(),
                          {bf16_tensor("model.layers.0.mlp.up_proj.weight", {64, 64}, w)});
  write_tools_safetensors((dir / "model-00002-of-00002.safetensors").string(),
                          {bf16_tensor("model.layers.1.mlp.up_proj.weight", {64, 64}, w)});
}

TEST(InspectErrors, TruncatedShardIsInvalidInputNamingTheFile) {
  clitest::TempDir dir;
  write_good_and_bad(dir);
  const auto bad = dir / "model-00002-of-00002.safetensors";
  std::filesystem::resize_file(bad, std::filesystem::file_size(bad) - 100);
  for (const bool json : {false, true}) {
    const InspectRun r = run_inspect_cmd(dir.path().string(), json);
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("model-00002-of-00002.safetensors"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("model-00001"), std::string::npos) << r.err;
    if (json) {
      // One error document on stdout, naming the file too.
      const auto doc = nlohmann::json::parse(r.out);
      EXPECT_EQ(doc["ok"], false);
      EXPECT_EQ(doc["error"]["code"], "bad_offsets");
      EXPECT_NE(doc["error"]["message"].get<std::string>().find("model-00002-of-00002"),
                std::string::npos);
    } else {
      EXPECT_TRUE(r.out.empty()) << r.out;
    }
  }
}

TEST(InspectErrors, GarbageHeaderIsInvalidInput) {
  clitest::TempDir dir;
  std::string bytes(8, '\0');
  bytes[0] = 16;  // little-endian header length
  bytes += "{\"a\": [1, 2    ";
  clitest::write_text(dir / "broken.safetensors", bytes);
  const InspectRun r = run_inspect_cmd((dir / "broken.safetensors").string(), false);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("broken.safetensors"), std::string::npos) << r.err;
}

TEST(InspectErrors, CorruptDf11GroupNamesFileAndGroup) {
  clitest::TempDir dir;
  const std::string p = "model.layers.0";
  write_df11_file((dir / "model.safetensors").string(),
                  {ToolsGroup{p,
                              {bf16_tensor(p + ".mlp.up_proj.weight", {256, 64},
                                           gaussian_bf16(256 * 64, 0.1f, 3))}}},
                  {}, true);
  // Set the top bit of output position 1 (the end of block 0): far past n, so
  // validate_group must refuse it (spec 3.6).
  const auto file = dir / "model.safetensors";
  clitest::flip_byte(file, clitest::tensor_file_offset(file, p + ".output_positions") + 7, 0x80);
  const InspectRun r = run_inspect_cmd(dir.path().string(), false);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("model.safetensors"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("model.layers.0"), std::string::npos) << r.err;
}

TEST(InspectErrors, MissingPathIsNotFound) {
  clitest::TempDir dir;
  const std::string missing = (dir / "nothing-here").string();
  const InspectRun r = run_inspect_cmd(missing, false);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("nothing-here"), std::string::npos) << r.err;
}

TEST(InspectErrors, FolderWithoutShards) {
  clitest::TempDir dir;
  clitest::write_text(dir / "config.json", "{}");
  const InspectRun r = run_inspect_cmd(dir.path().string(), false);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("no *.safetensors"), std::string::npos) << r.err;
}

TEST(InspectErrors, UnknownBaselineIsUsage) {
  clitest::TempDir dir;
  write_good_and_bad(dir);
  const InspectRun r = run_inspect_cmd(dir.path().string(), false, {"gzip"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("gzip"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

}  // namespace
}  // namespace df11::test
