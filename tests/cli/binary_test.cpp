// The real df11 binary: stdout, stderr and exit codes of compress, decompress and verify;
// signals and a full disk leave nothing behind.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_process.h"
#include "cli_test_model.h"
#include "df11/sha256.h"

namespace df11::clitest {
namespace {

namespace fs = std::filesystem;

std::string file_sha256(const fs::path& file) {
  const std::string bytes = read_text(file);
  return sha256_hex(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

class Binary : public ::testing::Test {
 protected:
  fs::path model() const { return tmp_ / "model"; }
  fs::path df11() const { return tmp_ / "df11"; }
  fs::path restored() const { return tmp_ / "restored"; }
  fs::path scratch() const {
    fs::create_directories(tmp_ / "logs");
    return tmp_ / "logs";
  }
  ProcessResult run(const std::vector<std::string>& args, const SpawnOptions& options = {}) {
    return run_df11(args, scratch(), options);
  }
  // Entries of the test folder other than the logs.
  std::vector<std::string> outputs() const {
    auto names = list_dir(tmp_.path());
    std::erase(names, "logs");
    return names;
  }

  TempDir tmp_;
};

// --source-sha256 records each original's SHA-256 (spec 5.3), which verify --sha256 then
// matches against every rebuilt file: the recorded value is the original file's.
TEST_F(Binary, CompressVerifyDecompress) {
  write_tiny_llama(model(), {});
  const ProcessResult c = run({"compress", model(), "-o", df11(), "--source-sha256"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("compressed " + model().string() + " -> " + df11().string()),
            std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("GB/s"), std::string::npos) << c.out;
  EXPECT_EQ(c.err, "");  // stderr is not a terminal: no progress bar

  const ProcessResult v = run({"verify", df11()});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_NE(v.out.find(": OK: "), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("files rebuilt from recorded headers"), std::string::npos) << v.out;
  const ProcessResult vs = run({"verify", df11(), "--sha256"});
  EXPECT_EQ(vs.exit_code, 0) << vs.out << vs.err;
  EXPECT_NE(vs.out.find("2 files rebuilt and matched to recorded sha256"), std::string::npos)
      << vs.out;
  const ProcessResult va = run({"verify", df11(), "--against", model(), "--device", "cpu"});
  EXPECT_EQ(va.exit_code, 0) << va.out << va.err;
  EXPECT_NE(va.out.find("compared bit for bit with " + model().string()), std::string::npos)
      << va.out;

  const ProcessResult d = run({"decompress", df11(), "-o", restored(), "--sha256"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("restored"), std::string::npos) << d.out;
  EXPECT_EQ(tree_sha256(restored()), tree_sha256(model()));
  // The recorded value itself: each original's SHA-256 appears in its DF11 shard's metadata.
  for (const char* name :
       {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) {
    const std::string digest = file_sha256(model() / name);
    EXPECT_NE(read_text(df11() / name).find(digest), std::string::npos)
        << name << " does not record " << digest;
  }
}

// spec 5.3 (1.2): by default compress records no SHA-256 of the originals (--no-source-sha256,
// kept for scripts, is the same: the same bytes); the folder verifies and restores byte for
// byte all the same, and --sha256, which has nothing to compare with, says so and writes
// nothing (exit 2, as for any impossible request).
TEST_F(Binary, DefaultRecordsNoSourceSha256AndRefusesSha256) {
  write_tiny_llama(model(), {});
  const ProcessResult c = run({"compress", model(), "-o", df11()});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const std::string first = "model-00001-of-00002.safetensors";
  EXPECT_EQ(read_text(df11() / first).find(file_sha256(model() / first)), std::string::npos);
  const fs::path again = tmp_ / "again";
  const ProcessResult n = run({"compress", model(), "-o", again, "--no-source-sha256"});
  ASSERT_EQ(n.exit_code, 0) << n.err;
  EXPECT_EQ(tree_sha256(again), tree_sha256(df11()));
  fs::remove_all(again);
  const ProcessResult both =
      run({"compress", model(), "-o", again, "--source-sha256", "--no-source-sha256"});
  EXPECT_EQ(both.exit_code, 2) << both.out << both.err;
  EXPECT_NE(both.err.find("excludes"), std::string::npos) << both.err;
  EXPECT_FALSE(fs::exists(again));
  const std::string expected = "error: --sha256: " + df11().string() +
                               ": the original files' SHA-256 was not recorded (model-00001-of-"
                               "00002.safetensors and 1 more; compressed without --source-sha256)";

  const ProcessResult v = run({"verify", df11(), "--device", "cpu"});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_NE(v.out.find(": OK: "), std::string::npos) << v.out;
  const ProcessResult vs = run({"verify", df11(), "--sha256", "--device", "cpu"});
  EXPECT_EQ(vs.exit_code, 2) << vs.out << vs.err;
  EXPECT_EQ(vs.err.rfind(expected, 0), 0u) << vs.err;
  EXPECT_NE(vs.err.find("without --sha256 every rebuilt byte is still checked"), std::string::npos)
      << vs.err;

  const ProcessResult ds = run({"decompress", df11(), "-o", restored(), "--sha256"});
  EXPECT_EQ(ds.exit_code, 2) << ds.out << ds.err;
  EXPECT_EQ(ds.err.rfind(expected, 0), 0u) << ds.err;
  EXPECT_FALSE(fs::exists(restored()));
  EXPECT_EQ(outputs(), (std::vector<std::string>{"df11", "model"}));

  const ProcessResult d = run({"decompress", df11(), "-o", restored()});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(tree_sha256(restored()), tree_sha256(model()));
}

// compress -v says when each original's SHA-256 ran (the floor of compress on many cores):
// under --threads 1 no worker runs beside the shard writers, so each hashes its own file.
TEST_F(Binary, VerboseCompressTimesTheSourceHashes) {
  write_tiny_llama(model(), {});
  const ProcessResult c =
      run({"compress", model(), "-o", df11(), "-v", "--threads", "1", "--source-sha256"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const size_t line = c.out.find("source SHA-256 (seconds since hashing began): ");
  ASSERT_NE(line, std::string::npos) << c.out;
  const std::string text = c.out.substr(line, c.out.find('\n', line) - line);
  for (const char* shard :
       {"model-00001-of-00002.safetensors (", "model-00002-of-00002.safetensors ("}) {
    EXPECT_NE(text.find(shard), std::string::npos) << text;
  }
  EXPECT_NE(text.find(" GB/s by its shard's writer; "), std::string::npos) << text;
  EXPECT_EQ(text.find("not hashed"), std::string::npos) << text;

  const ProcessResult n = run({"compress", model(), "-o", df11(), "-v", "--force"});
  ASSERT_EQ(n.exit_code, 0) << n.err;
  EXPECT_EQ(n.out.find("source SHA-256"), std::string::npos) << n.out;
}

// decompress --parallel-files N restores N originals side by side, with any thread count,
// byte for byte; 0 is refused as a usage error before anything is written.
TEST_F(Binary, DecompressParallelFiles) {
  write_tiny_llama(model(), {});
  const ProcessResult c = run({"compress", model(), "-o", df11()});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  for (const char* threads : {"1", "3"}) {
    const ProcessResult d = run({"decompress", df11(), "-o", restored(), "--force",
                                 "--parallel-files", "2", "--threads", threads});
    ASSERT_EQ(d.exit_code, 0) << d.err;
    EXPECT_EQ(tree_sha256(restored()), tree_sha256(model())) << "--threads " << threads;
  }
  fs::remove_all(restored());
  const ProcessResult zero = run({"decompress", df11(), "-o", restored(), "--parallel-files", "0"});
  EXPECT_EQ(zero.exit_code, 2) << zero.out << zero.err;
  EXPECT_NE(zero.err.find("--parallel-files"), std::string::npos) << zero.err;
  EXPECT_FALSE(fs::exists(restored()));
}

TEST_F(Binary, QuietAndGlobalOptionsAfterTheSubcommand) {
  write_tiny_llama(model(), {});
  const ProcessResult q = run({"-q", "compress", model(), "-o", df11()});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.out, "");
  EXPECT_EQ(q.err, "");
  const ProcessResult t = run({"compress", model(), "-o", df11(), "--threads", "1", "--force",
                               "--group-by", "tensor", "-v"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("group 'model.layers.2.mlp.down_proj'"), std::string::npos) << t.out;
  const auto config = nlohmann::json::parse(read_text(df11() / "config.json"));
  EXPECT_TRUE(config["dfloat11_config"]["pattern_dict"].contains(
      "model\\.layers\\.0\\.self_attn\\.q_proj"));
  // spec 7.2: transformers loads the folder through the df11 quantization method.
  EXPECT_EQ(config["quantization_config"], nlohmann::json({{"quant_method", "df11"}}));
  EXPECT_EQ(run({"verify", df11(), "--against", model(), "-q"}).exit_code, 0);
}

TEST_F(Binary, UsageErrorsExitWith2) {
  write_tiny_llama(model(), {});
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},
           {"compress", model()},
           {"compress", model(), "-o", df11(), "--group-by", "layer"},
           {"verify", df11(), "--device", "gpu"},
           {"frobnicate"},
           {"--threads", "-3", "verify", df11()}}) {
    const ProcessResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_FALSE(r.err.empty());
  }
  const ProcessResult help = run({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("compress"), std::string::npos) << help.out;
  EXPECT_FALSE(fs::exists(df11()));
}

TEST_F(Binary, ExistingOutputIsKeptWithoutForce) {
  write_tiny_llama(model(), {});
  fs::create_directories(df11());
  write_text(df11() / "mine.txt", "keep");
  const ProcessResult r = run({"compress", model(), "-o", df11()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("error: " + df11().string() + ": output exists (use --force"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(list_dir(df11()), std::vector<std::string>{"mine.txt"});
  const ProcessResult f = run({"--force", "compress", model(), "-o", df11()});
  EXPECT_EQ(f.exit_code, 0) << f.err;
  EXPECT_FALSE(fs::exists(df11() / "mine.txt"));
  EXPECT_EQ(outputs(), (std::vector<std::string>{"df11", "model"}));
}

TEST_F(Binary, CorruptionFailsVerifyWith1) {
  write_tiny_llama(model(), {});
  ASSERT_EQ(run({"compress", model(), "-o", df11()}).exit_code, 0);
  const fs::path shard = df11() / "model-00002-of-00002.safetensors";
  flip_byte(shard, tensor_file_offset(shard, "model.layers.2.encoded_exponent") + 9, 0x04);
  const ProcessResult v = run({"verify", df11()});
  EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
  EXPECT_NE(v.out.find("FAIL tensor 'model.layers.2.encoded_exponent'"), std::string::npos)
      << v.out;
  EXPECT_NE(v.out.find("FAILED"), std::string::npos) << v.out;
  EXPECT_NE(v.err.find("error: verification failed"), std::string::npos) << v.err;
  const ProcessResult d = run({"decompress", df11(), "-o", restored()});
  EXPECT_EQ(d.exit_code, 1) << d.err;
  EXPECT_NE(d.err.find("model.layers.2"), std::string::npos) << d.err;
  EXPECT_FALSE(fs::exists(restored()));
}

TEST_F(Binary, MissingInputExitsWith3) {
  const ProcessResult r = run({"compress", tmp_ / "nope", "-o", df11()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find((tmp_ / "nope").string()), std::string::npos) << r.err;
  EXPECT_EQ(outputs(), std::vector<std::string>{});
}

// Starts compress on a model big enough to take a while, waits until its temp folder exists
// (it is working), then sends `sig`.
void interrupt_compress(const fs::path& model, const fs::path& out, const fs::path& scratch,
                        int sig, int expected_exit) {
  ChildProcess child({"compress", model.string(), "-o", out.string()}, scratch);
  const fs::path temp = out.string() + ".df11-tmp-" + std::to_string(child.pid());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(temp) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ASSERT_TRUE(fs::exists(temp)) << "compress never started";
  child.signal(sig);
  const ProcessResult r = child.wait();
  EXPECT_EQ(r.exit_code, expected_exit) << r.out << r.err;
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(temp));
}

TEST_F(Binary, InterruptLeavesNothingBehind) {
  TinyLlama big;
  big.layers = 8;
  big.hidden = 512;
  big.intermediate = 1536;
  big.vocab = 4096;
  write_tiny_llama(model(), big);
  interrupt_compress(model(), df11(), scratch(), SIGINT, 130);
  interrupt_compress(model(), df11(), scratch(), SIGTERM, 143);
  EXPECT_EQ(outputs(), std::vector<std::string>{"model"});
}

TEST_F(Binary, FullDiskLeavesNothingBehind) {
  write_tiny_llama(model(), {});
  SpawnOptions limited;
  limited.file_size_limit = 16384;  // bytes per file: the first shard does not fit
  const ProcessResult r = run({"compress", model(), "-o", df11()}, limited);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_EQ(r.term_signal, 0);  // SIGXFSZ is ignored: the error comes back as EFBIG
  EXPECT_NE(r.err.find("model-00001-of-00002.safetensors"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
  EXPECT_EQ(outputs(), std::vector<std::string>{"model"});

  ASSERT_EQ(run({"compress", model(), "-o", df11()}).exit_code, 0);
  const ProcessResult d = run({"decompress", df11(), "-o", restored()}, limited);
  EXPECT_EQ(d.exit_code, 3) << d.err;
  EXPECT_NE(d.err.find("File too large"), std::string::npos) << d.err;
  EXPECT_EQ(outputs(), (std::vector<std::string>{"df11", "model"}));
}

}  // namespace
}  // namespace df11::clitest
