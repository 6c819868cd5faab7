// Decode throughput on a realistic 1 GiB group (512M BF16 weights, N(0, 0.02) with 1e-4
// outliers). Disabled by default (it needs ~4 GB of memory and a quiet machine); run with
//   build/tests/df11_decoder_tests --gtest_also_run_disabled_tests --gtest_filter='Thr*'
// DF11_THROUGHPUT_WEIGHTS overrides the size. Prints wall-clock GB/s of BF16 output and the
// CPU time per weight (what the decoder costs on a loaded machine).
#include <gtest/gtest.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <span>
#include <string>
#include <vector>

#include "df11/decoder.h"
#include "df11/encoder.h"
#include "encoder_test_data.h"

namespace df11 {
namespace {

double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

template <typename F>
void timed(const char* what, uint64_t n, F&& body) {
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  body();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = cpu_seconds() - cpu0;
  std::printf("%-22s %7.3f s wall  %6.2f GB/s BF16 out   %5.2f ns CPU per weight\n", what, wall,
              2.0 * static_cast<double>(n) / wall / 1e9, cpu * 1e9 / static_cast<double>(n));
}

TEST(Throughput, DISABLED_Decode1GiBGroup) {
  const char* env = std::getenv("DF11_THROUGHPUT_WEIGHTS");
  const uint64_t n = env ? std::stoull(env) : uint64_t{1} << 29;
  std::vector<uint16_t> w(n);
  constexpr uint64_t kChunk = uint64_t{1} << 20;
  tbb::parallel_for(tbb::blocked_range<uint64_t>(0, (n + kChunk - 1) / kChunk), [&](auto r) {
    for (uint64_t c = r.begin(); c < r.end(); ++c) {
      const uint64_t end = std::min(n, (c + 1) * kChunk);
      const auto piece = testing::gaussian_bf16(end - c * kChunk, 0.02, c + 1, 1e-4);
      std::copy(piece.begin(), piece.end(), w.begin() + static_cast<int64_t>(c * kChunk));
    }
  });
  std::span<const uint16_t> m(w);
  Result<GroupBuffers> g = encode_group(std::span<const std::span<const uint16_t>>(&m, 1));
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  std::printf("%llu weights, %.3f bits per exponent, %llu blocks\n",
              static_cast<unsigned long long>(n),
              8.0 * static_cast<double>(g->encoded_exponent.size()) / static_cast<double>(n),
              static_cast<unsigned long long>(g->view().n_blocks()));
  Result<GroupInfo> info = validate_group(g->view(), "bench");
  ASSERT_TRUE(info.is_ok());

  std::vector<uint16_t> out(n);
  for (int rep = 0; rep < 3; ++rep) {
    Status s;
    timed("decode_group", n, [&] { s = decode_group(g->view(), out, "bench", 0, &*info); });
    ASSERT_TRUE(s.is_ok()) << s.to_string();
  }
  ASSERT_TRUE(out == w);
  // Bounded-memory use: 64M-weight pieces.
  std::vector<uint16_t> piece(uint64_t{1} << 26);
  timed("decode_group 64M ranges", n, [&] {
    for (uint64_t first = 0; first < n; first += piece.size()) {
      const uint64_t count = std::min<uint64_t>(piece.size(), n - first);
      ASSERT_TRUE(
          decode_group(g->view(), std::span(piece).first(count), "bench", first, &*info).is_ok());
    }
  });
  std::fill(out.begin(), out.end(), 0);
  Status s;
  timed("decode_group_reference", n, [&] { s = decode_group_reference(g->view(), out, "bench"); });
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_TRUE(out == w);
}

}  // namespace
}  // namespace df11
