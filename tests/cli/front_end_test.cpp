// The command line as a user meets it: help that lists every option, named and suggested
// mistakes, bounded --threads, a progress bar that fits the terminal, --json results, -q,
// one error format, plurals, and verify refusing a folder that is not DF11.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "cli_process.h"
#include "cli_test_model.h"
#include "cli_text.h"
#include "console.h"

namespace df11::clitest {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class FrontEnd : public ::testing::Test {
 protected:
  fs::path model() const { return tmp_ / "model"; }
  fs::path df11() const { return tmp_ / "df11"; }
  fs::path restored() const { return tmp_ / "restored"; }
  ProcessResult run(const std::vector<std::string>& args) {
    fs::create_directories(tmp_ / "logs");
    return run_df11(args, tmp_ / "logs");
  }
  void compressed(bool sharded = true) {
    TinyLlama m;
    m.sharded = sharded;
    write_tiny_llama(model(), m);
    const ProcessResult c = run({"compress", model(), "-o", df11(), "-q"});
    ASSERT_EQ(c.exit_code, 0) << c.err;
  }

  TempDir tmp_;
};

TEST_F(FrontEnd, EverySubcommandHelpListsItsOptionsWithDefaults) {
  struct Expect {
    std::vector<std::string> args;
    std::vector<std::string> shown;
  };
  const std::vector<std::string> common = {"--threads", "-q,--quiet", "-v,--verbose"};
  for (const Expect& e : std::vector<Expect>{
           {{"compress", "--help"}, {"-o,--output", "--force", "--group-by", "=block", "--json"}},
           {{"decompress", "--help"}, {"-o,--output", "--force", "--sha256", "--json"}},
           {{"verify", "--help"}, {"--against", "--device", "=auto", "--sha256", "--json"}},
           {{"inspect", "--help"}, {"--baseline", "--json"}},
           {{"bench", "decode", "--help"},
            {"--device", "=auto", "--runs", "=20", "--warmup", "--json"}},
           {{"bench", "gemv", "--help"},
            {"--batch", "=1,2,4,8,16", "--runs", "=20", "--warmup", "=5", "--model-blocks", "=32",
             "--seed", "--hidden", "=4096", "--json"}}}) {
    const ProcessResult r = run(e.args);
    EXPECT_EQ(r.exit_code, 0) << e.args[0] << r.err;
    std::vector<std::string> want = e.shown;
    want.insert(want.end(), common.begin(), common.end());
    for (const std::string& s : want) {
      EXPECT_NE(r.out.find(s), std::string::npos) << e.args[0] << " --help lacks " << s << "\n"
                                                  << r.out;
    }
  }
}

// `df11 bench gemv` needs a GPU: without one (every device hidden, or a build without CUDA)
// it says so and exits with the environment's code before generating anything; bad --batch
// lists are usage errors naming the item.
TEST_F(FrontEnd, BenchGemvWithoutAGpuFailsClearly) {
  const char* old = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  const ProcessResult r = run({"bench", "gemv", "--batch", "1,3"});
  const ProcessResult j = run({"bench", "gemv", "--json"});
  if (saved) {
    ::setenv("CUDA_VISIBLE_DEVICES", saved->c_str(), 1);
  } else {
    ::unsetenv("CUDA_VISIBLE_DEVICES");
  }
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("error: bench gemv needs a CUDA GPU: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[unsupported]"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");  // refused before the 218M-weight workload is generated or timed
  EXPECT_EQ(j.exit_code, 3);
  const json doc = json::parse(j.out);  // one document, the error's
  EXPECT_EQ(doc["command"], "bench gemv");
  EXPECT_EQ(doc["ok"], false);
  EXPECT_EQ(doc["error"]["code"], "unsupported");
  EXPECT_NE(doc["error"]["message"].get<std::string>().find("bench gemv needs a CUDA GPU"),
            std::string::npos);
  for (const char* bad : {"0", "17", "1,,2", "2,2", "x", "1,2,"}) {
    const ProcessResult b = run({"bench", "gemv", "--batch", bad});
    EXPECT_EQ(b.exit_code, 2) << bad << b.err;
    EXPECT_NE(b.err.find("error: --batch '" + std::string(bad) + "'"), std::string::npos) << b.err;
  }
}

TEST_F(FrontEnd, UnknownCommandsAndOptionsAreNamedWithTheClosestMatch) {
  const ProcessResult c = run({"compres", "x", "-o", "y"});
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.err.find("unknown command 'compres' (did you mean 'compress'?)"), std::string::npos)
      << c.err;
  const ProcessResult v = run({"verfy", "x"});
  EXPECT_NE(v.err.find("did you mean 'verify'?"), std::string::npos) << v.err;
  const ProcessResult o = run({"compress", "x", "-o", "y", "--forse"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("unknown option '--forse' for df11 compress (did you mean '--force'?)"),
            std::string::npos)
      << o.err;
  const ProcessResult far = run({"verify", "x", "--frobnicate"});
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_NE(far.err.find("unknown option '--frobnicate' for df11 verify"), std::string::npos)
      << far.err;
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
  EXPECT_FALSE(fs::exists(tmp_ / "y"));
}

TEST_F(FrontEnd, ThreadsAreBoundedAndZeroOrNegativeRefused) {
  for (const char* bad : {"0", "-1", "-99999999999999999999", "two"}) {
    const ProcessResult r = run({"verify", "x", "--threads", bad});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("--threads " + std::string(bad) + ": must be a whole number of threads"),
              std::string::npos)
        << r.err;
    EXPECT_LT(r.err.size(), 300u) << r.err;  // no huge range printed
  }
  compressed();
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const ProcessResult big = run({"verify", df11(), "--threads", "10000"});
  EXPECT_EQ(big.exit_code, 0) << big.err;
  EXPECT_NE(big.err.find("note: --threads 10000 is more than the"), std::string::npos) << big.err;
  EXPECT_NE(big.err.find("using " + std::to_string(cores)), std::string::npos) << big.err;
  const ProcessResult quiet = run({"verify", df11(), "--threads", "10000", "-q"});
  EXPECT_EQ(quiet.exit_code, 0);
  EXPECT_EQ(quiet.err, "");
}

TEST(ProgressLine, FitsEightyAndFiftyColumnsAtAnyProgress) {
  const uint64_t totals[] = {0, 1, 999, 123456789, 16ull << 30, 999'999'999'999'999ull};
  for (const int columns : {80, 50, 30, 20}) {
    for (const uint64_t total : totals) {
      for (const double f : {0.0, 0.013, 0.5, 0.999, 1.0}) {
        for (const double seconds : {0.0, 0.5, 3600.0}) {
          const auto done = static_cast<uint64_t>(f * static_cast<double>(total));
          const std::string line = app::progress_line("compressing", done, total, seconds, columns);
          EXPECT_LE(line.size(), static_cast<size_t>(columns - 1))
              << columns << " cols: '" << line << "'";
          EXPECT_EQ(line.find('\n'), std::string::npos);
          EXPECT_NE(line.find('%'), std::string::npos) << line;
          if (columns >= 50) {
            EXPECT_NE(line.find("compressing ["), std::string::npos) << line;
          }
        }
      }
    }
  }
  // At 80 columns there is room for everything.
  const std::string wide = app::progress_line("verifying  ", 1'000'000'000, 4'000'000'000, 2.0, 80);
  EXPECT_NE(wide.find(" 25%"), std::string::npos) << wide;
  EXPECT_NE(wide.find("ETA"), std::string::npos) << wide;
  EXPECT_NE(wide.find("MB/s"), std::string::npos) << wide;
}

// The bar keeps its width from the first draw to the last (fixed-width fields), and shows no
// ETA before it can know one (it once read "ETA 54143s" on its first draw).
TEST(ProgressLine, KeepsItsWidthAndWaitsForAnEta) {
  for (const uint64_t total : {uint64_t{16} << 30, uint64_t{1234567}, uint64_t{999}}) {
    for (const int columns : {80, 60}) {
      size_t width = 0;
      for (int i = 0; i <= 200; ++i) {
        const uint64_t done = total / 200 * i + (i == 200 ? total % 200 : 0);
        const double seconds = 0.01 + i * 0.25;
        const std::string line = app::progress_line("compressing", done, total, seconds, columns);
        if (width == 0) width = line.size();
        EXPECT_EQ(line.size(), width) << columns << " cols, step " << i << ": '" << line << "'";
        if (seconds < 1.0 && columns == 80) {
          EXPECT_NE(line.find("ETA --:--"), std::string::npos) << line;
        }
      }
    }
  }
  const std::string early = app::progress_line("compressing", 1000, 16ull << 30, 0.02, 80);
  EXPECT_NE(early.find("ETA --:--"), std::string::npos) << early;
  const std::string later = app::progress_line("compressing", 8ull << 30, 16ull << 30, 30.0, 80);
  EXPECT_NE(later.find("ETA 0:30"), std::string::npos) << later;
}

TEST(ProgressLine, ConsoleRedrawsInPlaceWithinTheWidth) {
  for (const int columns : {80, 50}) {
    std::ostringstream out, err;
    {
      app::Console console(out, err, 1, /*progress_bar=*/true, columns);
      console.progress_start("compressing", 10'000'000'000ull);
      for (int i = 0; i < 4; ++i) {
        console.progress_advance(1'000'000'000ull);
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
      }
      console.progress_finish();
    }
    const std::string text = err.str();
    EXPECT_EQ(text.find('\n'), std::string::npos) << "a redraw must not scroll";
    size_t draws = 0;
    for (size_t at = text.find("\r\033[K"); at != std::string::npos;
         at = text.find("\r\033[K", at + 1)) {
      const size_t start = at + 4;
      const size_t end = std::min(text.find('\r', start), text.size());
      EXPECT_LE(end - start, static_cast<size_t>(columns - 1)) << text.substr(start, end - start);
      ++draws;
    }
    EXPECT_GE(draws, 3u) << "drawn, then erased at the end";
    EXPECT_EQ(out.str(), "");
  }
}

TEST_F(FrontEnd, JsonResultsCarryTheSummaryFigures) {
  TinyLlama m;
  write_tiny_llama(model(), m);
  const ProcessResult c = run({"compress", model(), "-o", df11(), "--json"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const json cj = json::parse(c.out);
  EXPECT_EQ(cj["command"], "compress");
  EXPECT_TRUE(cj["ok"].get<bool>());
  EXPECT_EQ(cj["shards"], 2);
  EXPECT_GT(cj["groups_coded"].get<int>(), 0);
  EXPECT_LT(cj["ratio"].get<double>(), 0.8);
  // The text summary of the same work names the same counts.
  const ProcessResult t = run({"compress", model(), "-o", tmp_ / "df11b"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find(std::to_string(cj["groups_coded"].get<int>()) + " groups (" +
                       std::to_string(cj["tensors_coded"].get<int>()) + " tensors) coded"),
            std::string::npos)
      << t.out;

  const ProcessResult v = run({"verify", df11(), "--against", model(), "--json"});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  const json vj = json::parse(v.out);
  EXPECT_TRUE(vj["ok"].get<bool>());
  EXPECT_EQ(vj["compared"], cj["tensors"]);
  EXPECT_TRUE(vj["failures"].empty());

  const ProcessResult d = run({"decompress", df11(), "-o", restored(), "--json"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const json dj = json::parse(d.out);
  EXPECT_EQ(dj["files"], 2);
  EXPECT_EQ(tree_sha256(restored()), tree_sha256(model()));

  const ProcessResult i = run({"inspect", df11(), "--json"});
  ASSERT_EQ(i.exit_code, 0) << i.err;
  EXPECT_TRUE(json::accept(i.out)) << i.out;

  // A failing verify lists every failure, per tensor, in the document.
  const fs::path shard = df11() / "model-00002-of-00002.safetensors";
  flip_byte(shard, tensor_file_offset(shard, "model.layers.2.encoded_exponent") + 9, 0x04);
  const ProcessResult bad = run({"verify", df11(), "--json"});
  EXPECT_EQ(bad.exit_code, 1);
  const json bj = json::parse(bad.out);
  EXPECT_FALSE(bj["ok"].get<bool>());
  ASSERT_FALSE(bj["failures"].empty());
  EXPECT_NE(bj["failures"][0]["message"].get<std::string>().find("model.layers.2.encoded_exponent"),
            std::string::npos);
  EXPECT_EQ(bad.out.find("FAIL "), std::string::npos) << "only the document on stdout";

  // An error that stops a command is a document too.
  const ProcessResult missing = run({"decompress", tmp_ / "nope", "-o", tmp_ / "r2", "--json"});
  EXPECT_EQ(missing.exit_code, 3);
  const json mj = json::parse(missing.out);
  EXPECT_FALSE(mj["ok"].get<bool>());
  EXPECT_EQ(mj["error"]["code"], "not_found");
}

TEST_F(FrontEnd, QuietSilencesEverythingButErrorsAndWarnings) {
  write_tiny_llama(model(), {});
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"compress", model(), "-o", df11(), "-q"},
                                             {"verify", df11(), "-q"},
                                             {"verify", df11(), "--against", model(), "-q"},
                                             {"inspect", df11(), "-q"},
                                             {"inspect", model(), "-q"},
                                             {"decompress", df11(), "-o", restored(), "-q"}}) {
    const ProcessResult r = run(args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << r.err;
    EXPECT_EQ(r.out, "") << args[0];
    EXPECT_EQ(r.err, "") << args[0];
  }
  // Errors still come through.
  const ProcessResult e = run({"verify", tmp_ / "nope", "-q"});
  EXPECT_EQ(e.exit_code, 3);
  EXPECT_NE(e.err.find("error: "), std::string::npos);
}

TEST_F(FrontEnd, OneErrorFormatEverywhere) {
  write_tiny_llama(model(), {});
  const std::regex format(R"(^error: .+ \[[a-z_]+\]$)");
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"compress", tmp_ / "nope", "-o", df11()},
                                             {"decompress", tmp_ / "nope", "-o", restored()},
                                             {"verify", tmp_ / "nope"},
                                             {"inspect", tmp_ / "nope"},
                                             {"inspect", model(), "--baseline", "gzip"},
                                             {"compress", model()},
                                             {"verify", model(), "--device", "gpu"},
                                             {"frobnicate"},
                                             {"verify", model()}}) {
    const ProcessResult r = run(args);
    EXPECT_NE(r.exit_code, 0);
    const std::string first = r.err.substr(0, r.err.find('\n'));
    EXPECT_TRUE(std::regex_match(first, format)) << "'" << first << "'";
  }
}

TEST_F(FrontEnd, SingularAndPlural) {
  compressed(/*sharded=*/false);
  const ProcessResult v = run({"verify", df11()});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find(" 1 file rebuilt"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find(" 1 header checksum,"), std::string::npos) << v.out;
  EXPECT_EQ(v.out.find(" 1 files"), std::string::npos) << v.out;
  const ProcessResult d = run({"decompress", df11(), "-o", restored()});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find(": 1 file ("), std::string::npos) << d.out;
  EXPECT_EQ(app::count_of(1, "group"), "1 group");
  EXPECT_EQ(app::count_of(0, "group"), "0 groups");
  EXPECT_EQ(app::count_of(2, "group"), "2 groups");
  // Every line of -v and of inspect: no "1 tensors", "1 files", "1 groups".
  const std::regex wrong(R"((^|[^0-9.,])1 (tensors|files|groups|shards|weights|members)\b)");
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"compress", model(), "-o", tmp_ / "v", "-v"},
                                             {"verify", df11(), "-v"},
                                             {"decompress", df11(), "-o", tmp_ / "r", "-v"},
                                             {"inspect", df11(), "-v"},
                                             {"inspect", model()}}) {
    const ProcessResult r = run(args);
    ASSERT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    std::smatch m;
    EXPECT_FALSE(std::regex_search(r.out, m, wrong)) << args[0] << ": '" << m.str() << "' in\n"
                                                     << r.out;
    EXPECT_FALSE(std::regex_search(r.err, m, wrong)) << args[0] << ": '" << m.str() << "' in\n"
                                                     << r.err;
  }
}

TEST_F(FrontEnd, QuietAndVerboseTogetherAreRefused) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"verify", tmp_ / "x", "-q", "-v"},
                                             {"-q", "verify", tmp_ / "x", "-v"},
                                             {"inspect", tmp_ / "x", "-qv"}}) {
    const ProcessResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("-q and -v cannot be used together"), std::string::npos) << r.err;
  }
}

TEST_F(FrontEnd, HelpNamesWhatOptionsTake) {
  for (const char* command : {"compress", "verify", "decompress", "inspect", "pull", "push"}) {
    const ProcessResult r = run({command, "--help"});
    EXPECT_NE(r.out.find("--threads N"), std::string::npos) << command << r.out;
    EXPECT_NE(r.out.find("--transfers N"), std::string::npos) << command << r.out;
    EXPECT_EQ(r.out.find("--threads TEXT"), std::string::npos) << command << r.out;
  }
}

// Groups and tensors are listed as people count: layers.9 before layers.10.
TEST_F(FrontEnd, GroupsAreListedInNumericOrder) {
  SyntheticCheckpoint c;
  c.config_json = R"({"architectures": ["LlamaForCausalLM"], "tie_word_embeddings": false})";
  for (int l = 0; l < 12; ++l) {
    c.tensors.push_back(
        {"model.layers." + std::to_string(l) + ".self_attn.q_proj.weight", {32, 32}});
  }
  // Stored by name, as Hugging Face writes safetensors: layers.10 comes before layers.2.
  std::sort(c.tensors.begin(), c.tensors.end(),
            [](const SyntheticTensor& a, const SyntheticTensor& b) { return a.name < b.name; });
  write_checkpoint(model(), c);
  ASSERT_EQ(run({"compress", model(), "-o", df11(), "-q"}).exit_code, 0);
  for (const fs::path& dir : {model(), df11()}) {
    const ProcessResult text = run({"inspect", dir});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    size_t previous = 0;
    for (int l = 0; l < 12; ++l) {
      const size_t at = text.out.find("model.layers." + std::to_string(l) + " ");
      ASSERT_NE(at, std::string::npos) << l << text.out;
      EXPECT_GT(at, previous) << "layers." << l << " out of order:\n" << text.out;
      previous = at;
    }
    const json j = json::parse(run({"inspect", dir, "--json"}).out);
    ASSERT_EQ(j["groups"].size(), 12u);
    EXPECT_TRUE(app::natural_less("x.9.w", "x.10.w"));
    EXPECT_FALSE(app::natural_less("x.10.w", "x.9.w"));
    EXPECT_TRUE(app::natural_less("lm_head", "model.embed_tokens"));
    EXPECT_FALSE(app::natural_less("a", "a"));
    for (int l = 0; l < 12; ++l) {
      EXPECT_EQ(j["groups"][l]["name"], "model.layers." + std::to_string(l));
    }
  }
}

TEST_F(FrontEnd, CudaNoteOnlyWhenAskedFor) {
  compressed();
  const ProcessResult plain = run({"verify", df11()});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.err.find("CUDA"), std::string::npos) << plain.err;
  const ProcessResult verbose = run({"verify", df11(), "-v", "--json"});
  ASSERT_EQ(verbose.exit_code, 0) << verbose.err;
  const json j = json::parse(verbose.out);
  if (j["device"] == "cpu") {
    // No GPU here (or no CUDA build): -v says so.
    const ProcessResult text = run({"verify", df11(), "-v"});
    EXPECT_NE(text.err.find("note: "), std::string::npos) << text.err;
    EXPECT_NE(text.err.find("CUDA"), std::string::npos) << text.err;
  }
}

TEST_F(FrontEnd, VerifyRefusesAFolderThatIsNotDf11) {
  write_tiny_llama(model(), {});
  const ProcessResult r = run({"verify", model()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("not a DF11 folder"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("OK"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace df11::clitest
