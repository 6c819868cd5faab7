// xxh3_bench: XXH3-64 throughput of Debian's libxxhash against df11's xxh3_64 (which takes
// the AVX-512 kernel where the CPU has it: format/src/xxh3_avx512.cpp), on the same random
// buffer, alternating, median of the runs (BENCHMARKS.md "CPU checksums").
//
//   xxh3_bench [MiB per buffer, default 8] [runs, default 41]
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "df11/hash.h"
#include "xxh3_kernels.h"

namespace {

template <typename F>
double seconds(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 8;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 41;
  if (mib == 0 || runs <= 0) {
    std::fprintf(stderr, "usage: xxh3_bench [MiB > 0] [runs > 0]\n");
    return 2;
  }
  std::vector<uint8_t> data(mib << 20);
  std::mt19937_64 rng(1);
  for (uint8_t& b : data) b = static_cast<uint8_t>(rng());
  std::vector<double> lib, df11;
  uint64_t a = 0, b = 0;
  for (int r = 0; r < runs + 1; ++r) {  // run 0 warms up
    const double tl = seconds([&] { a = XXH3_64bits(data.data(), data.size()); });
    const double td = seconds([&] { b = df11::xxh3_64(data); });
    if (a != b) {
      std::fprintf(stderr, "digests differ: %016llx %016llx\n", static_cast<unsigned long long>(a),
                   static_cast<unsigned long long>(b));
      return 1;
    }
    if (r == 0) continue;
    lib.push_back(tl);
    df11.push_back(td);
  }
  const double gb = static_cast<double>(data.size()) / 1e9;
  std::printf("buffer %zu MiB, %d runs, median; df11 kernel: %s\n", mib, runs,
              df11::detail::xxh3_avx512_usable() ? "AVX-512F" : "libxxhash (no AVX-512F)");
  std::printf("libxxhash XXH3_64bits: %.1f GB/s\n", gb / median(lib));
  std::printf("df11 xxh3_64:          %.1f GB/s (%.2fx)\n", gb / median(df11),
              median(lib) / median(df11));
  return 0;
}
