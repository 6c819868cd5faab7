// df11 inspect on BF16 checkpoints: the predicted sizes are exactly what encode_group writes,
// the raw fallbacks are those of df11 compress, and the JSON numbers agree with each other.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cli_test_model.h"
#include "df11/encoder.h"
#include "tools_checkpoint.h"
#include "tools_inspect_run.h"

namespace df11::test {
namespace {

using nlohmann::json;

// A two-layer Llama-like checkpoint: embeddings, per-layer q/up/down projections and norms,
// and an F32 side tensor. Layer 1's up projection is > 1M weights (several encoder chunks).
std::vector<ToolsTensor> small_llama() {
  std::vector<ToolsTensor> t;
  t.push_back(bf16_tensor("model.embed_tokens.weight", {500, 64}, gaussian_bf16(32000, 0.125f, 1)));
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const uint64_t inter = l == 0 ? 256 : 16400;
    t.push_back(bf16_tensor(p + "self_attn.q_proj.weight", {64, 64},
                            gaussian_bf16(64 * 64, 0.125f, 10 + l)));
    t.push_back(bf16_tensor(p + "mlp.up_proj.weight", {inter, 64},
                            gaussian_bf16(inter * 64, 0.125f, 20 + l)));
    t.push_back(bf16_tensor(p + "mlp.down_proj.weight", {64, inter},
                            gaussian_bf16(inter * 64, 0.0625f, 30 + l)));
    std::vector<uint16_t> ones(64, tools_bf16(1.0f));
    t.push_back(bf16_tensor(p + "input_layernorm.weight", {64}, ones));
  }
  ToolsTensor f32{"model.rotary_emb.inv_freq", Dtype::kF32, {4}, std::vector<uint8_t>(16, 0)};
  t.push_back(f32);
  return t;
}

// encode_group on `members` (in order): the sizes the compressor writes.
GroupBuffers encode(const std::vector<const ToolsTensor*>& members, GroupPlan* plan) {
  std::vector<std::vector<uint16_t>> w;
  for (const ToolsTensor* m : members) w.push_back(bf16_weights(*m));
  std::vector<std::span<const uint16_t>> spans(w.begin(), w.end());
  auto out = encode_group(spans, plan);
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  return out.is_ok() ? std::move(out).value() : GroupBuffers{};
}

void expect_bytes_match(const json& bytes, const GroupBuffers& b) {
  EXPECT_EQ(bytes["encoded_exponent"], b.encoded_exponent.size());
  EXPECT_EQ(bytes["sign_mantissa"], b.sign_mantissa.size());
  EXPECT_EQ(bytes["luts"], b.luts.size());
  EXPECT_EQ(bytes["gaps"], b.gaps.size());
  EXPECT_EQ(bytes["output_positions"], b.output_positions.size());
  EXPECT_EQ(bytes["split_positions"], b.split_positions.size());
  const uint64_t total = b.encoded_exponent.size() + b.sign_mantissa.size() + b.luts.size() +
                         b.gaps.size() + b.output_positions.size() + b.split_positions.size();
  EXPECT_EQ(bytes["total"], total);
}

TEST(InspectPredict, GroupSizesEqualWhatEncodeGroupWrites) {
  clitest::TempDir dir;
  const auto tensors = small_llama();
  write_tools_safetensors((dir / "model.safetensors").string(), tensors);
  const json j = inspect_json(dir.path().string());
  ASSERT_EQ(j["kind"], "bf16");
  ASSERT_EQ(j["groups"].size(), 3u);  // embed_tokens, layers.0, layers.1

  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l);
    // Block grouping: the 2-D weights of the layer, in file order; the norm stays raw.
    const std::vector<const ToolsTensor*> members = {&tensors[1 + 4 * l], &tensors[2 + 4 * l],
                                                     &tensors[3 + 4 * l]};
    GroupPlan plan;
    const GroupBuffers b = encode(members, &plan);
    const json& g = by_name(j["groups"], p);
    ASSERT_TRUE(g["coded"].get<bool>());
    ASSERT_EQ(g["members"].size(), 3u);
    EXPECT_EQ(g["members"][0]["name"], p + ".self_attn.q_proj.weight");
    EXPECT_EQ(g["members"][2]["name"], p + ".mlp.down_proj.weight");
    EXPECT_EQ(g["n_elements"], plan.n_elements);
    expect_bytes_match(g["bytes"], b);
    const double measured = static_cast<double>(g["bytes"]["total"].get<uint64_t>()) /
                            (2.0 * static_cast<double>(plan.n_elements));
    EXPECT_DOUBLE_EQ(g["ratio"].get<double>(), measured);
    EXPECT_EQ(g["coded_bits"], plan.n_bits);
    // The shortest code here is >= 2 bits, so inspect reports the bound, which must hold.
    EXPECT_LE(plan.max_block_weights, g["max_block_weights"].get<uint64_t>());
    // Code lengths and counts are the plan's.
    for (const json& s : g["code"]["symbols"]) {
      const uint32_t e = s["exponent"];
      EXPECT_EQ(s["count"], plan.histogram[e]) << e;
      EXPECT_EQ(s["length"], plan.code.length[e]) << e;
    }
  }
}

TEST(InspectPredict, EachTensorAloneEqualsEncodingItAlone) {
  clitest::TempDir dir;
  const auto tensors = small_llama();
  write_tools_safetensors((dir / "model.safetensors").string(), tensors);
  const json j = inspect_json(dir.path().string());
  // Every 2-D BF16 weight is listed; norms and the F32 tensor are not group members.
  EXPECT_EQ(j["tensors"].size(), 7u);
  for (const ToolsTensor& t : tensors) {
    if (t.shape.size() != 2) continue;
    GroupPlan plan;
    const GroupBuffers b = encode({&t}, &plan);
    const json& row = by_name(j["tensors"], t.name);
    ASSERT_TRUE(row.contains("alone")) << t.name;
    expect_bytes_match(row["alone"]["bytes"], b);
    EXPECT_EQ(row["bytes"], t.bytes.size());
    EXPECT_NEAR(row["alone"]["entropy_bits_per_weight"].get<double>(), plan.entropy_bits, 1e-12);
  }
  // Raw: two norms and the F32 tensor, by name.
  ASSERT_EQ(j["raw_tensors"].size(), 3u);
  EXPECT_EQ(by_name(j["raw_tensors"], "model.rotary_emb.inv_freq")["dtype"], "F32");
  EXPECT_EQ(by_name(j["raw_tensors"], "model.layers.1.input_layernorm.weight")["bytes"], 128);
}

TEST(InspectPredict, JsonNumbersAreConsistent) {
  clitest::TempDir dir;
  write_tools_safetensors((dir / "model.safetensors").string(), small_llama());
  const json j = inspect_json(dir.path().string());
  uint64_t coded_bf16 = 0, stored = 0, weights = 0;
  for (const json& g : j["groups"]) {
    ASSERT_TRUE(g["coded"].get<bool>());
    const json& b = g["bytes"];
    const uint64_t parts = b["encoded_exponent"].get<uint64_t>() +
                           b["sign_mantissa"].get<uint64_t>() + b["luts"].get<uint64_t>() +
                           b["gaps"].get<uint64_t>() + b["output_positions"].get<uint64_t>() +
                           b["split_positions"].get<uint64_t>();
    EXPECT_EQ(b["total"], parts);
    const uint64_t n = g["n_elements"];
    EXPECT_EQ(g["bf16_bytes"], 2 * n);
    EXPECT_EQ(b["sign_mantissa"], n);  // spec 3.2: one byte per weight
    uint64_t count = 0, bits = 0;
    for (const json& s : g["code"]["symbols"]) {
      count += s["count"].get<uint64_t>();
      bits += s["count"].get<uint64_t>() * s["length"].get<uint64_t>();
      EXPECT_LE(s["length"].get<uint32_t>(), j["limits"]["max_code_length"].get<uint32_t>());
    }
    EXPECT_EQ(count, n);
    EXPECT_EQ(g["coded_bits"], bits);
    EXPECT_EQ(b["encoded_exponent"], (bits + 7) / 8);
    const double h = g["entropy_bits_per_weight"];
    // Shannon: no prefix code beats the entropy; Huffman is within 1 bit of it.
    EXPECT_GE(g["mean_code_length_bits"].get<double>() + 1e-12, h);
    EXPECT_LT(g["mean_code_length_bits"].get<double>(), h + 1.0);
    EXPECT_DOUBLE_EQ(g["entropy_ratio"].get<double>(), (h + 8) / 16);
    EXPECT_LE(g["entropy_ratio"].get<double>(), g["bound_ratio"].get<double>());
    EXPECT_LE(g["bound_ratio"].get<double>(), g["ratio"].get<double>());
    EXPECT_TRUE(g["compatible"].get<bool>());
    coded_bf16 += 2 * n;
    stored += b["total"].get<uint64_t>();
    weights += n;
  }
  const json& t = j["totals"];
  EXPECT_EQ(t["coded_bf16_bytes"], coded_bf16);
  EXPECT_EQ(t["coded_stored_bytes"], stored);
  EXPECT_EQ(t["coded_weights"], weights);
  EXPECT_DOUBLE_EQ(t["coded_ratio"].get<double>(), static_cast<double>(stored) / coded_bf16);
  uint64_t raw = 0;
  for (const json& r : j["raw_tensors"]) raw += r["bytes"].get<uint64_t>();
  EXPECT_EQ(t["raw_bytes"], raw);
  EXPECT_EQ(t["model_original_bytes"], coded_bf16 + raw);
  EXPECT_EQ(t["model_stored_bytes"], stored + raw);
  EXPECT_EQ(j["limits"]["max_weights_per_block_compat"], kMaxWeightsPerBlockCompat);
  EXPECT_TRUE(j["baseline"].is_null());
  EXPECT_FALSE(j["totals"].contains("zstd"));
}

TEST(InspectPredict, UncodableAndLowEntropyGroupsArePredictedRaw) {
  clitest::TempDir dir;
  std::vector<uint16_t> with_inf = gaussian_bf16(4096, 0.1f, 5);
  with_inf[77] = 0x7F80;  // +Inf: exponent 255 cannot be coded (spec 3.3)
  // All zeros: a 1-bit code, 32768 weights start in every block, above 23550.
  const std::vector<uint16_t> zeros(100000, 0);
  write_tools_safetensors(
      (dir / "model.safetensors").string(),
      {bf16_tensor("model.layers.0.mlp.up_proj.weight", {64, 64}, with_inf),
       bf16_tensor("model.layers.1.mlp.up_proj.weight", {1000, 100}, zeros),
       bf16_tensor("model.layers.2.mlp.up_proj.weight", {64, 64}, gaussian_bf16(4096, 0.1f, 6))});
  const json j = inspect_json(dir.path().string());
  const json& inf = by_name(j["groups"], "model.layers.0");
  EXPECT_FALSE(inf["coded"].get<bool>());
  EXPECT_NE(inf["raw_reason"].get<std::string>().find("Inf"), std::string::npos);
  EXPECT_TRUE(inf["bytes"].is_null());
  EXPECT_EQ(inf["ratio"], 1.0);
  const json& flat = by_name(j["groups"], "model.layers.1");
  EXPECT_FALSE(flat["coded"].get<bool>());
  EXPECT_NE(flat["raw_reason"].get<std::string>().find("23550"), std::string::npos);
  EXPECT_TRUE(by_name(j["groups"], "model.layers.2")["coded"].get<bool>());
  // Both raw groups' tensors are stored unchanged; the notes say why.
  EXPECT_EQ(j["raw_tensors"].size(), 2u);
  EXPECT_EQ(j["totals"]["groups_coded"], 1);
  EXPECT_GE(j["notes"].size(), 2u);
  // The block count reported for the flat tensor alone is exact and matches the encoder's.
  const json& alone = by_name(j["tensors"], "model.layers.1.mlp.up_proj.weight")["alone"];
  GroupPlan plan;
  const std::span<const uint16_t> span(zeros);
  ASSERT_TRUE(encode_group(std::span(&span, 1), &plan).is_ok());
  EXPECT_TRUE(alone["max_block_weights_exact"].get<bool>());
  EXPECT_EQ(alone["max_block_weights"], plan.max_block_weights);
  EXPECT_GT(plan.max_block_weights, kMaxWeightsPerBlockCompat);
}

TEST(InspectPredict, ResultDoesNotDependOnThreadCount) {
  clitest::TempDir dir;
  write_tools_safetensors((dir / "model.safetensors").string(), small_llama());
  const json one = inspect_json(dir.path().string(), {"zstd"}, 1);
  const json two = inspect_json(dir.path().string(), {"zstd"}, 2);
  EXPECT_EQ(one, two);
}

TEST(InspectPredict, SingleFileEqualsItsFolder) {
  clitest::TempDir dir;
  write_tools_safetensors((dir / "model.safetensors").string(), small_llama());
  json folder = inspect_json(dir.path().string());
  json file = inspect_json((dir / "model.safetensors").string());
  folder.erase("path");
  file.erase("path");
  EXPECT_EQ(folder, file);
}

}  // namespace
}  // namespace df11::test
