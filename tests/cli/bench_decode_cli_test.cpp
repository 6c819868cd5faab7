// df11 bench decode as a user runs it: --device auto by default (CPU without a GPU), the
// thread count it really used, and --json.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_process.h"
#include "cli_test_model.h"

namespace df11::clitest {
namespace {

namespace fs = std::filesystem;

class BenchDecode : public ::testing::Test {
 protected:
  ProcessResult bench(std::vector<std::string> extra) {
    std::vector<std::string> args = {"bench",          "decode", "--hidden", "64",
                                     "--intermediate", "128",    "--kv-dim", "16",
                                     "--runs",         "2",      "--warmup", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    fs::create_directories(tmp_ / "logs");
    return run_df11(args, tmp_ / "logs");
  }
  static bool have_gpu() {
    std::error_code ec;
    return fs::exists("/proc/driver/nvidia/version", ec);
  }
  TempDir tmp_;
};

TEST_F(BenchDecode, DeviceAutoByDefault) {
  if (have_gpu()) GTEST_SKIP() << "a GPU is here: auto picks it";
  const ProcessResult r = bench({});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("device: cpu ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verified: bit-exact"), std::string::npos) << r.out;
}

TEST_F(BenchDecode, SaysTheThreadsItUsed) {
  const ProcessResult r = bench({"--device", "cpu", "--threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("device: cpu (1 thread)"), std::string::npos) << r.out;
}

TEST_F(BenchDecode, Json) {
  const ProcessResult r = bench({"--device", "cpu", "--threads", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["command"], "bench decode");
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["threads"], 1);
  EXPECT_EQ(j["runs"], 2);
  EXPECT_EQ(j["workload"]["weights"], 64 * 64 * 2 + 16 * 64 * 2 + 128 * 64 * 3);
  EXPECT_GT(j["decode"]["median_ms"].get<double>(), 0);
  EXPECT_TRUE(j["verified"].get<bool>());
  if (!have_gpu()) {
    const ProcessResult c = bench({"--device", "cuda", "--json"});
    EXPECT_EQ(c.exit_code, 3);
    const auto e = nlohmann::json::parse(c.out);
    EXPECT_EQ(e["command"], "bench decode");
    EXPECT_EQ(e["ok"], false);
  }
}

}  // namespace
}  // namespace df11::clitest
