// --threads N is respected. Under --threads 1, compress, decompress and verify compute on the
// calling thread alone: every other thread of the process (TBB workers left from earlier
// runs, helper threads, even ones that started and ended meanwhile) adds no CPU time. The
// check is the process's CPU clock against the calling thread's, in nanoseconds.
#include <time.h>

#include <sstream>
#include <string>
#include <thread>

#include "cli_fixture.h"

namespace df11::clitest {
namespace {

double cpu_seconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct CpuUse {
  double self = 0;    // the calling thread
  double others = 0;  // every other thread of the process
};

template <class Work>
CpuUse cpu_use_of(Work&& work) {
  const double self0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
  const double all0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
  work();
  const double self = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - self0;
  const double all = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - all0;
  return {self, all - self};
}

class Threads : public PipelineFixture {
 protected:
  void SetUp() override {
    PipelineFixture::SetUp();
    // ~12 M weights: tens of milliseconds of work per command, several chunks per group.
    TinyLlama m;
    m.layers = 4;
    m.hidden = 512;
    m.intermediate = 1024;
    m.vocab = 2048;
    write_tiny_llama(model(), m);
  }

  void run_step(const std::string& step, int threads) {
    std::ostringstream out, err;
    int code = -1;
    if (step == "compress") {
      CompressOptions o;
      o.model_dir = model();
      o.out_dir = df11();
      o.force = true;
      o.threads = threads;
      o.chunk_weights = 1 << 18;
      code = app::run_compress_command(o, {}, out, err);
    } else if (step == "decompress") {
      DecompressOptions o;
      o.df11_dir = df11();
      o.out_dir = restored();
      o.force = true;
      o.threads = threads;
      code = app::run_decompress_command(o, {}, out, err);
    } else {
      VerifyOptions o;
      o.df11_dir = df11();
      o.against = model();
      o.device = app::DeviceChoice::kCpu;
      o.threads = threads;
      code = app::run_verify_command(o, {}, out, err);
    }
    EXPECT_EQ(code, 0) << step << ": " << out.str() << err.str();
  }
};

TEST_F(Threads, OneThreadComputesOnTheCallingThreadAlone) {
  for (const char* step : {"compress", "decompress", "verify"}) {
    SCOPED_TRACE(step);
    run_step(step, 0);  // all cores first: TBB workers now exist and could join
    const CpuUse use = cpu_use_of([&] { run_step(step, 1); });
    EXPECT_GT(use.self, 0.0);
    // Scheduler bookkeeping of idle workers may cost microseconds, not the work's time.
    EXPECT_LE(use.others, 0.002 + 0.02 * use.self)
        << "other threads used " << use.others << " s beside the caller's " << use.self << " s";
  }
  EXPECT_EQ(tree_sha256(restored()), tree_sha256(model()));
}

// The measurement sees other threads' work when there is some: with all cores on a machine
// of two or more, the pool does part of the compression.
TEST_F(Threads, AllCoresUseOtherThreads) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: no workers to see";
  const CpuUse use = cpu_use_of([&] { run_step("compress", 0); });
  EXPECT_GT(use.others, 0.1 * use.self)
      << "other threads used " << use.others << " s beside the caller's " << use.self << " s";
}

}  // namespace
}  // namespace df11::clitest
