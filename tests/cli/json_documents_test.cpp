// --json everywhere: every command that takes it prints exactly one JSON document on stdout,
// whether it succeeds or fails, with "command" and "ok" ({"ok": false, "error": {"code",
// "message"}} when it stops); verify's failures are records (file, group, tensor, code,
// message).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_process.h"
#include "cli_test_model.h"

namespace df11::clitest {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class JsonDocuments : public ::testing::Test {
 protected:
  void SetUp() override {
    // The Hub commands must fail without a network, at once.
    ::setenv("HF_HUB_OFFLINE", "1", 1);
    ::setenv("HF_TOKEN", "hf_test", 1);
    ::setenv("HF_HOME", (tmp_ / "hf").c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("HF_HUB_OFFLINE");
    ::unsetenv("HF_TOKEN");
    ::unsetenv("HF_HOME");
  }
  fs::path model() const { return tmp_ / "model"; }
  fs::path df11() const { return tmp_ / "df11"; }
  ProcessResult run(const std::vector<std::string>& args) {
    fs::create_directories(tmp_ / "logs");
    return run_df11(args, tmp_ / "logs");
  }
  // stdout is one JSON document naming `command`, with "ok" as the exit code says.
  json document(const ProcessResult& r, const std::string& command) {
    json j;
    try {
      j = json::parse(r.out);
    } catch (const std::exception& e) {
      ADD_FAILURE() << command << ": stdout is not one JSON document (" << e.what() << "): '"
                    << r.out << "'";
      return json::object();
    }
    EXPECT_EQ(j.value("command", ""), command) << r.out;
    EXPECT_TRUE(j.contains("ok") && j["ok"].is_boolean()) << r.out;
    if (j.contains("ok") && j["ok"].is_boolean()) {
      EXPECT_EQ(j["ok"].get<bool>(), r.exit_code == 0) << r.out << r.err;
    }
    if (r.exit_code != 0 && j.contains("error")) {
      EXPECT_TRUE(j["error"].contains("code") && j["error"].contains("message")) << r.out;
    }
    return j;
  }
  // A failure that stops the command: the error's code.
  std::string error_code(const ProcessResult& r, const std::string& command) {
    EXPECT_NE(r.exit_code, 0) << command;
    const json j = document(r, command);
    if (!j.contains("error")) {
      ADD_FAILURE() << command << ": no 'error' in " << r.out;
      return "";
    }
    return j["error"]["code"].get<std::string>();
  }

  TempDir tmp_;
};

TEST_F(JsonDocuments, SuccessAndFailureOfEveryCommand) {
  write_tiny_llama(model(), {});
  document(run({"compress", model(), "-o", df11(), "--json"}), "compress");
  document(run({"verify", df11(), "--json"}), "verify");
  document(run({"decompress", df11(), "-o", tmp_ / "back", "--json"}), "decompress");
  document(run({"inspect", df11(), "--json"}), "inspect");
  document(run({"inspect", model(), "--json"}), "inspect");

  const fs::path nope = tmp_ / "nope";
  EXPECT_EQ(error_code(run({"compress", nope, "-o", tmp_ / "x", "--json"}), "compress"),
            "not_found");
  EXPECT_EQ(error_code(run({"decompress", nope, "-o", tmp_ / "x", "--json"}), "decompress"),
            "not_found");
  EXPECT_EQ(error_code(run({"verify", nope, "--json"}), "verify"), "not_found");
  EXPECT_EQ(error_code(run({"inspect", nope, "--json"}), "inspect"), "not_found");
  EXPECT_EQ(error_code(run({"pull", "not a repo", "--json"}), "pull"), "invalid_argument");
  EXPECT_EQ(error_code(run({"pull", "org/not-cached", "--json"}), "pull"), "not_found");
  EXPECT_FALSE(error_code(run({"push", df11(), "me/x", "--json"}), "push").empty());
  EXPECT_FALSE(error_code(run({"publish", "org/a", "me/b", "--json"}), "publish").empty());
  // Usage errors too, once --json is on the command line.
  EXPECT_EQ(error_code(run({"compress", model(), "--json"}), "compress"), "invalid_argument");
  EXPECT_EQ(error_code(run({"verify", df11(), "--json", "--frobnicate"}), "verify"),
            "invalid_argument");
}

TEST_F(JsonDocuments, VerifyFailuresAreRecords) {
  write_tiny_llama(model(), {});
  ASSERT_EQ(run({"compress", model(), "-o", df11(), "-q"}).exit_code, 0);
  const fs::path shard = df11() / "model-00002-of-00002.safetensors";
  flip_byte(shard, tensor_file_offset(shard, "model.layers.2.encoded_exponent") + 9, 0x04);
  flip_byte(shard, tensor_file_offset(shard, "model.norm.weight") + 1, 0x01);
  const ProcessResult r = run({"verify", df11(), "--json"});
  EXPECT_EQ(r.exit_code, 1);
  const json j = document(r, "verify");
  ASSERT_TRUE(j["failures"].is_array() && !j["failures"].empty()) << r.out;
  bool coded = false, raw = false, stored = false;
  for (const json& f : j["failures"]) {
    ASSERT_TRUE(f.is_object()) << f.dump();
    for (const char* key : {"file", "group", "tensor", "code", "message"}) {
      EXPECT_TRUE(f.contains(key)) << key << " in " << f.dump();
    }
    EXPECT_TRUE(f["message"].is_string() && f["code"].is_string()) << f.dump();
    if (f["group"] == "model.layers.2" && f["file"] == "model-00002-of-00002.safetensors") {
      coded = true;
      // The stored checksum names the stored tensor; the decode names what it found.
      if (f["tensor"] == "model.layers.2.encoded_exponent") {
        stored = true;
        EXPECT_EQ(f["code"], "corrupt_data") << f.dump();
      }
    }
    if (f["tensor"] == "model.norm.weight") {
      raw = true;
      EXPECT_EQ(f["file"], "model-00002-of-00002.safetensors") << f.dump();
      EXPECT_TRUE(f["group"].is_null()) << f.dump();
      EXPECT_EQ(f["code"], "corrupt_data") << f.dump();
    }
  }
  EXPECT_TRUE(coded) << r.out;
  EXPECT_TRUE(stored) << r.out;
  EXPECT_TRUE(raw) << r.out;
}

}  // namespace
}  // namespace df11::clitest
