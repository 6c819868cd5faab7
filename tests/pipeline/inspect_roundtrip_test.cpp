// The prediction for a BF16 checkpoint is what df11 compress writes: inspect the checkpoint,
// compress it, inspect the DF11 folder, and compare group by group.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "cli_test_model.h"
#include "commands.h"
#include "tools_inspect_run.h"

namespace df11::test {
namespace {

using nlohmann::json;

void expect_prediction_is_exact(const clitest::TinyLlama& model) {
  clitest::TempDir dir;
  clitest::write_tiny_llama(dir / "bf16", model);
  app::CompressOptions options;
  options.model_dir = dir / "bf16";
  options.out_dir = dir / "df11";
  std::ostringstream out, err;
  ASSERT_EQ(app::run_compress_command(options, app::OutputOptions{0, false}, out, err), 0)
      << err.str();

  const json predicted = inspect_json((dir / "bf16").string());
  const json stored = inspect_json((dir / "df11").string());
  EXPECT_EQ(predicted["kind"], "bf16");
  EXPECT_EQ(stored["kind"], "df11");
  size_t coded = 0;
  for (const json& p : predicted["groups"]) {
    if (!p["coded"].get<bool>()) continue;
    ++coded;
    const json& s = by_name(stored["groups"], p["name"]);
    EXPECT_EQ(p["bytes"], s["bytes"]) << p["name"];
    EXPECT_EQ(p["code"], s["code"]) << p["name"];
    EXPECT_EQ(p["members"], s["members"]) << p["name"];
    EXPECT_EQ(p["entropy_bits_per_weight"], s["entropy_bits_per_weight"]) << p["name"];
    EXPECT_GE(p["max_block_weights"].get<uint64_t>(), s["max_block_weights"].get<uint64_t>());
  }
  EXPECT_EQ(coded, stored["groups"].size());
  // Tensors stored unchanged: the same set, the same bytes.
  std::map<std::string, uint64_t> raw_predicted, raw_stored;
  for (const json& r : predicted["raw_tensors"]) raw_predicted[r["name"]] = r["bytes"];
  for (const json& r : stored["raw_tensors"]) raw_stored[r["name"]] = r["bytes"];
  EXPECT_EQ(raw_predicted, raw_stored);
  for (const char* key : {"coded_stored_bytes", "coded_bf16_bytes", "model_stored_bytes",
                          "model_original_bytes", "raw_bytes", "coded_weights"}) {
    EXPECT_EQ(predicted["totals"][key], stored["totals"][key]) << key;
  }
  // The DF11 folder knows its originals' file sizes: the BF16 folder's shards.
  EXPECT_EQ(stored["totals"]["original_file_bytes"], predicted["totals"]["file_bytes"]);
}

TEST(InspectRoundTrip, PredictionEqualsCompressOutput) {
  expect_prediction_is_exact(clitest::TinyLlama{});
}

TEST(InspectRoundTrip, PredictionEqualsCompressOutputWithRawFallback) {
  clitest::TinyLlama model;
  model.inf_tensor = "model.layers.1.mlp.up_proj.weight";
  model.tied_embeddings = true;
  expect_prediction_is_exact(model);
}

}  // namespace
}  // namespace df11::test
