// Messages that used to send the user the wrong way: each mistake gets a message that says
// what it is and what to do (the real binary: exit code, stderr).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_process.h"
#include "cli_test_model.h"

namespace df11::clitest {
namespace {

namespace fs = std::filesystem;

class Messages : public ::testing::Test {
 protected:
  fs::path model() const { return tmp_ / "model"; }
  fs::path df11() const { return tmp_ / "df11"; }
  ProcessResult run(const std::vector<std::string>& args) {
    fs::create_directories(tmp_ / "logs");
    return run_df11(args, tmp_ / "logs");
  }
  void compressed() {
    write_tiny_llama(model(), {});
    const ProcessResult c = run({"compress", model(), "-o", df11(), "-q"});
    ASSERT_EQ(c.exit_code, 0) << c.err;
  }
  TempDir tmp_;
};

TEST_F(Messages, CompressOfADf11FolderSaysItIsDf11Already) {
  compressed();
  const ProcessResult r = run({"compress", df11(), "-o", tmp_ / "again"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(df11().string() + ": this folder is already DF11 (decompress or verify it"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("F16 or F32"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp_ / "again"));
}

TEST_F(Messages, DecompressOfABf16FolderSaysWhatVerifySays) {
  write_tiny_llama(model(), {});
  const ProcessResult v = run({"verify", model()});
  const ProcessResult d = run({"decompress", model(), "-o", tmp_ / "out"});
  EXPECT_EQ(d.exit_code, v.exit_code);
  EXPECT_EQ(d.err, v.err);
  EXPECT_NE(d.err.find("not a DF11 folder"), std::string::npos) << d.err;
  EXPECT_NE(d.err.find("df11 compress " + model().string() + " -o OUT_DIR"), std::string::npos)
      << d.err;
  EXPECT_EQ(d.err.find("dfloat11_config"), std::string::npos) << d.err;
}

TEST_F(Messages, InspectOfAJsonFileSaysItIsNotSafetensors) {
  write_tiny_llama(model(), {});
  const ProcessResult r = run({"inspect", model() / "config.json"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find((model() / "config.json").string() + ": not a safetensors file"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("Max_Header_Bytes"), std::string::npos) << r.err;
}

// BFL/ComfyUI distribute single .safetensors files without config.json: compress takes the
// file, writes a DF11 folder the loader can read, and decompress gives the one file back.
TEST_F(Messages, CompressOfASingleSafetensorsFile) {
  SyntheticCheckpoint c;
  for (int b = 0; b < 2; ++b) {
    const std::string p = "double_blocks." + std::to_string(b) + ".";
    c.tensors.push_back({p + "img_attn.qkv.weight", {96, 32}});
    c.tensors.push_back({p + "img_attn.qkv.bias", {96}});
    c.tensors.push_back({p + "img_mlp.0.weight", {128, 32}});
  }
  c.tensors.push_back({"final_layer.linear.weight", {64, 32}});
  write_checkpoint(model(), c);
  fs::remove(model() / "config.json");
  fs::rename(model() / "model.safetensors", tmp_ / "flux1-tiny.safetensors");
  const fs::path file = tmp_ / "flux1-tiny.safetensors";
  const ProcessResult r = run({"compress", file, "-o", df11()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(list_dir(df11()), (std::vector<std::string>{"config.json", "flux1-tiny.safetensors"}));
  const auto config = nlohmann::json::parse(read_text(df11() / "config.json"));
  EXPECT_TRUE(config.contains("dfloat11_config")) << config.dump();
  EXPECT_EQ(config.size(), 1u) << config.dump();
  const ProcessResult v = run({"verify", df11(), "--against", file});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_EQ(v.err, "");
  const ProcessResult d = run({"decompress", df11(), "-o", tmp_ / "back"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(list_dir(tmp_ / "back"), (std::vector<std::string>{"flux1-tiny.safetensors"}));
  EXPECT_EQ(tree_sha256(tmp_ / "back").at("flux1-tiny.safetensors"),
            tree_sha256(tmp_.path()).at("flux1-tiny.safetensors"));
  // A folder holding the file alone works the same way.
  fs::create_directories(tmp_ / "bfl");
  fs::copy_file(file, tmp_ / "bfl" / "flux1-tiny.safetensors");
  const ProcessResult f = run({"compress", tmp_ / "bfl", "-o", tmp_ / "bfl.df11", "-q"});
  EXPECT_EQ(f.exit_code, 0) << f.err;
  // Any other file is not a checkpoint.
  const ProcessResult n = run({"compress", tmp_ / "logs", "-o", tmp_ / "x"});
  EXPECT_NE(n.exit_code, 0);
}

TEST_F(Messages, NanTensorsSayWhyTheyStayedRaw) {
  SyntheticCheckpoint c;
  c.config_json = R"({"architectures": ["LlamaForCausalLM"], "tie_word_embeddings": false})";
  c.tensors = {{"model.embed_tokens.weight", {512, 32}},
               {"model.layers.0.self_attn.q_proj.weight", {32, 32}}};
  c.nan_tensor = "model.embed_tokens.weight";
  write_checkpoint(model(), c);
  const ProcessResult r = run({"compress", model(), "-o", df11()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("'model.embed_tokens.weight' (32.8 kB: holds Inf, NaN or |x| >= 2^113)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("rename tensors"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Inf and NaN have no exponent code in DF11: such tensors are stored "
                       "unchanged, losslessly"),
            std::string::npos)
      << r.err;
}

TEST_F(Messages, NoNvidiaDriver) {
  std::error_code ec;
  if (fs::exists("/proc/driver/nvidia/version", ec)) GTEST_SKIP() << "an NVIDIA driver is here";
  compressed();
  const ProcessResult r = run({"verify", df11(), "--device", "cuda"});
  if (r.err.find("built without CUDA") != std::string::npos) GTEST_SKIP() << "no CUDA build";
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("--device cuda: no usable CUDA device: no NVIDIA driver found"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("cudaError"), std::string::npos) << r.err;
}

TEST_F(Messages, OutputUnderAFileSaysNotAFolder) {
  write_tiny_llama(model(), {});
  const ProcessResult r = run({"compress", model(), "-o", "/dev/full/x"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("/dev/full: not a folder"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("does not exist"), std::string::npos) << r.err;
  write_text(tmp_ / "file", "x");
  const ProcessResult f = run({"compress", model(), "-o", tmp_ / "file" / "out"});
  EXPECT_NE(f.err.find((tmp_ / "file").string() + ": not a folder"), std::string::npos) << f.err;
}

TEST_F(Messages, VerifyAgainstAnotherModelSaysSo) {
  compressed();
  TinyLlama other;
  other.hidden = 32;
  other.intermediate = 64;
  write_tiny_llama(tmp_ / "other", other);
  const ProcessResult r = run({"verify", df11(), "--against", tmp_ / "other"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(
      r.err.find(df11().string() + " and " + (tmp_ / "other").string() + " hold different models"),
      std::string::npos)
      << r.err;
  // The DF11 folder itself is fine, and the summary says what it checked.
  const ProcessResult j = run({"verify", df11(), "--against", tmp_ / "other", "--json"});
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_TRUE(doc["different_models"].is_string()) << j.out;
  // One changed tensor is no different model.
  write_tiny_llama(tmp_ / "same", {});
  flip_byte(tmp_ / "same" / "model-00001-of-00002.safetensors",
            tensor_file_offset(tmp_ / "same" / "model-00001-of-00002.safetensors",
                               "model.layers.0.self_attn.q_proj.weight") +
                4);
  const ProcessResult one = run({"verify", df11(), "--against", tmp_ / "same"});
  EXPECT_EQ(one.exit_code, 1);
  EXPECT_EQ(one.err.find("different models"), std::string::npos) << one.err;
}

TEST_F(Messages, MistypedOptionsAreSuggested) {
  write_tiny_llama(model(), {});
  const ProcessResult r = run({"compress", model(), "--out", df11()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown option '--out' for df11 compress (did you mean '--output'?)"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace df11::clitest
