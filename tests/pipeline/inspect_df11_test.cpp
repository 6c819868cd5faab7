// df11 inspect on DF11 files, with df11 metadata and without (published dfloat11 layout):
// stored sizes by part, decoded exponent counts, the code table, the block limit.
#include <gtest/gtest.h>

#include "cli_test_model.h"
#include "df11/encoder.h"
#include "tools_checkpoint.h"
#include "tools_inspect_run.h"

namespace df11::test {
namespace {

using nlohmann::json;

ToolsGroup layer_group(int layer) {
  const std::string p = "model.layers." + std::to_string(layer);
  return ToolsGroup{p,
                    {bf16_tensor(p + ".self_attn.q_proj.weight", {128, 64},
                                 gaussian_bf16(128 * 64, 0.1f, 100 + layer)),
                     bf16_tensor(p + ".mlp.up_proj.weight", {300, 64},
                                 gaussian_bf16(300 * 64, 0.05f, 200 + layer))}};
}

ToolsTensor norm_tensor(int layer) {
  return bf16_tensor("model.layers." + std::to_string(layer) + ".input_layernorm.weight", {64},
                     std::vector<uint16_t>(64, tools_bf16(1.0f)));
}

void expect_group_matches(const json& g, const ToolsGroup& group) {
  const EncodedToolsGroup e = encode_tools_group(group);
  const GroupBuffers& b = e.buffers;
  EXPECT_TRUE(g["coded"].get<bool>());
  EXPECT_EQ(g["bytes"]["luts"], b.luts.size());
  EXPECT_EQ(g["bytes"]["encoded_exponent"], b.encoded_exponent.size());
  EXPECT_EQ(g["bytes"]["sign_mantissa"], b.sign_mantissa.size());
  EXPECT_EQ(g["bytes"]["output_positions"], b.output_positions.size());
  EXPECT_EQ(g["bytes"]["gaps"], b.gaps.size());
  EXPECT_EQ(g["bytes"]["split_positions"], b.split_positions.size());
  EXPECT_EQ(g["n_elements"], e.plan.n_elements);
  // Counts come from decoding the file: they must be the original exponents' histogram.
  Histogram hist{};
  for (const ToolsTensor& m : group.members) {
    const Histogram h = exponent_histogram(bf16_weights(m));
    for (int i = 0; i < 256; ++i) hist[i] += h[i];
  }
  uint64_t listed = 0;
  for (const json& s : g["code"]["symbols"]) {
    const uint32_t x = s["exponent"];
    EXPECT_EQ(s["count"], hist[x]) << x;
    EXPECT_EQ(s["length"], e.plan.code.length[x]) << x;
    listed += s["count"].get<uint64_t>();
  }
  EXPECT_EQ(listed, e.plan.n_elements);
  EXPECT_EQ(g["code"]["n_luts"], b.luts.size() / 256);
  EXPECT_EQ(g["coded_bits"], e.plan.n_bits);
  // Read from output_positions: exact, and the encoder's own number.
  EXPECT_TRUE(g["max_block_weights_exact"].get<bool>());
  EXPECT_EQ(g["max_block_weights"], e.plan.max_block_weights);
  EXPECT_NEAR(g["entropy_bits_per_weight"].get<double>(), e.plan.entropy_bits, 1e-12);
}

TEST(InspectDf11, WithMetadata) {
  clitest::TempDir dir;
  const std::vector<ToolsGroup> groups = {layer_group(0), layer_group(1)};
  write_df11_file((dir / "model.safetensors").string(), groups, {norm_tensor(0), norm_tensor(1)},
                  true);
  const json j = inspect_json(dir.path().string());
  EXPECT_EQ(j["kind"], "df11");
  ASSERT_EQ(j["groups"].size(), 2u);
  for (const ToolsGroup& group : groups) {
    const json& g = by_name(j["groups"], group.name);
    expect_group_matches(g, group);
    ASSERT_EQ(g["members"].size(), 2u);
    EXPECT_EQ(g["members"][0]["name"], group.members[0].name);
    EXPECT_EQ(g["members"][1]["shape"], json::array({300, 64}));
    EXPECT_EQ(g["members"][1]["n_elements"], 300 * 64);
  }
  ASSERT_EQ(j["raw_tensors"].size(), 2u);
  EXPECT_EQ(j["raw_tensors"][0]["bytes"], 128);
  EXPECT_FALSE(j.contains("tensors"));
}

TEST(InspectDf11, WithoutMetadataNamesMembersFromPatternDict) {
  clitest::TempDir dir;
  const std::vector<ToolsGroup> groups = {layer_group(0), layer_group(1)};
  write_df11_file((dir / "model.safetensors").string(), groups, {norm_tensor(0)}, false);
  clitest::write_text(dir / "config.json",
                      R"({"model_type": "llama", "dfloat11_config": {"version": "0.5.0",
                 "threads_per_block": [512], "bytes_per_thread": 8, "pattern_dict":
                 {"model\\.layers\\.\\d+": ["self_attn.q_proj", "mlp.up_proj"]}}})");
  const json j = inspect_json(dir.path().string());
  EXPECT_EQ(j["kind"], "df11-no-metadata");
  for (const ToolsGroup& group : groups) {
    const json& g = by_name(j["groups"], group.name);
    expect_group_matches(g, group);
    ASSERT_EQ(g["members"].size(), 2u);
    EXPECT_EQ(g["members"][0]["name"], group.members[0].name);
    EXPECT_EQ(g["members"][1]["name"], group.members[1].name);
    // Sizes from split_positions; shapes are not stored without metadata.
    EXPECT_EQ(g["members"][0]["n_elements"], 128 * 64);
    EXPECT_EQ(g["members"][1]["n_elements"], 300 * 64);
    EXPECT_TRUE(g["members"][1]["shape"].is_null());
  }
  ASSERT_EQ(j["raw_tensors"].size(), 1u);
}

TEST(InspectDf11, WithoutMetadataOrConfigMemberNamesAreUnknown) {
  clitest::TempDir dir;
  write_df11_file((dir / "model.safetensors").string(), {layer_group(3)}, {}, false);
  const json j = inspect_json((dir / "model.safetensors").string());
  const json& g = by_name(j["groups"], "model.layers.3");
  ASSERT_EQ(g["members"].size(), 2u);
  EXPECT_TRUE(g["members"][0]["name"].is_null());
  EXPECT_EQ(g["members"][0]["n_elements"], 128 * 64);
}

TEST(InspectDf11, TextReportShowsPartsAndCodeTables) {
  clitest::TempDir dir;
  write_df11_file((dir / "model.safetensors").string(), {layer_group(0)}, {norm_tensor(0)}, true);
  const InspectRun normal = run_inspect_cmd(dir.path().string(), false);
  ASSERT_EQ(normal.code, 0) << normal.err;
  EXPECT_NE(normal.out.find("DF11 checkpoint (with df11 metadata)"), std::string::npos);
  EXPECT_NE(normal.out.find("encoded_exponent"), std::string::npos);
  EXPECT_NE(normal.out.find("limit 23,550"), std::string::npos);
  EXPECT_EQ(normal.out.find("magnitude"), std::string::npos);  // code tables need -v
  const InspectRun verbose = run_inspect_cmd(dir.path().string(), false, {}, 2);
  ASSERT_EQ(verbose.code, 0) << verbose.err;
  EXPECT_NE(verbose.out.find("magnitude"), std::string::npos);
  EXPECT_NE(verbose.out.find("model.layers.0.mlp.up_proj.weight"), std::string::npos);
  const InspectRun quiet = run_inspect_cmd(dir.path().string(), false, {}, 0);
  ASSERT_EQ(quiet.code, 0) << quiet.err;
  EXPECT_EQ(quiet.out, "");  // -q: errors and warnings only
  EXPECT_EQ(quiet.err, "");
}

}  // namespace
}  // namespace df11::test
