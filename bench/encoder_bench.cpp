// Encoder throughput on realistic weights: N(0, 0.02^2) BF16 with 1e-4 outliers.
//
//   encoder_bench [--gib X] [--threads T] [--reps R]
//
// Prints GB/s of BF16 input (2 bytes per weight) for each phase: exponent_histogram,
// plan_group, encode_group_range into prepared (zeroed, faulted-in) buffers, plan + that
// encode, and encode_group (which also allocates and zero-fills its outputs).
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "df11/encoder.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU time of the whole process: on a shared machine, wall time includes waiting for a core.
double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

// Generated in parallel from per-slice seeds, so the data does not depend on threads.
std::vector<uint16_t> realistic_weights(uint64_t n) {
  std::vector<uint16_t> w(n);
  constexpr uint64_t kSlice = 1 << 16;
  tbb::parallel_for(tbb::blocked_range<uint64_t>(0, (n + kSlice - 1) / kSlice), [&](const auto& r) {
    for (uint64_t s = r.begin(); s != r.end(); ++s) {
      uint64_t state = s * 0x1234567ull + 1;
      const uint64_t end = std::min(n, (s + 1) * kSlice);
      for (uint64_t i = s * kSlice; i < end; ++i) {
        const double u1 = 1.0 - (splitmix(state) >> 11) * 0x1.0p-53;
        const double u2 = (splitmix(state) >> 11) * 0x1.0p-53;
        double x = 0.02 * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
        if (splitmix(state) % 10000 == 0) {
          x = ((splitmix(state) >> 11) * 0x1.0p-53 * 2 - 1) * 1.28;
        }
        w[i] = to_bf16(static_cast<float>(x));
      }
    }
  });
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  double gib = 1.0;
  int threads = 0;
  int reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--gib")
      gib = std::atof(argv[i + 1]);
    else if (a == "--threads")
      threads = std::atoi(argv[i + 1]);
    else if (a == "--reps")
      reps = std::atoi(argv[i + 1]);
  }
  std::unique_ptr<tbb::global_control> limit;
  if (threads > 0) {
    limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                  threads);
  }
  const uint64_t n = static_cast<uint64_t>(gib * (1ull << 30) / 2);
  const double gb = 2.0 * n / 1e9;
  std::printf("input: %llu BF16 weights (%.3f GB), threads: %d\n",
              static_cast<unsigned long long>(n), gb,
              static_cast<int>(
                  tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism)));
  const std::vector<uint16_t> w = realistic_weights(n);
  const std::vector<std::span<const uint16_t>> members = {w};

  auto best_of = [&](const char* name, auto&& fn) {
    double best = 1e30, best_cpu = 1e30;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = Clock::now();
      const double c0 = cpu_seconds();
      if (!fn()) {
        std::printf("%s failed\n", name);
        std::exit(1);
      }
      best = std::min(best, seconds_since(t0));
      best_cpu = std::min(best_cpu, cpu_seconds() - c0);
    }
    std::printf("%-34s %8.3f s  %7.2f GB/s   cpu %7.3f s  %6.2f GB/s per core\n", name, best,
                gb / best, best_cpu, gb / best_cpu);
  };

  best_of("exponent_histogram", [&] {
    const df11::Histogram h = df11::exponent_histogram(w);
    return h[0] + h[1] + 1 > 0;
  });
  best_of("plan_group", [&] { return df11::plan_group(members).is_ok(); });

  const auto plan = df11::plan_group(members);
  if (!plan.is_ok()) {
    std::printf("%s\n", plan.status().to_string().c_str());
    return 1;
  }
  std::vector<uint8_t> codes(plan->n_bytes), sm(plan->n_elements), op(plan->output_positions_bytes),
      gaps(plan->gaps_bytes);
  const df11::GroupOutput out{codes, sm, op, gaps};
  auto zero = [&] {
    std::memset(codes.data(), 0, codes.size());
    std::memset(gaps.data(), 0, gaps.size());
  };
  best_of("encode_group_range (buffers ready)", [&] {
    zero();  // the caller's zero fill, timed: the bitstream and gaps only
    return df11::encode_group_range(members, *plan, 0, plan->n_chunks(), out).is_ok();
  });
  best_of("plan + encode_group_range", [&] {
    zero();
    const auto p = df11::plan_group(members);
    return p.is_ok() && df11::encode_group_range(members, *p, 0, p->n_chunks(), out).is_ok();
  });
  best_of("encode_group (allocates outputs)", [&] { return df11::encode_group(members).is_ok(); });

  std::printf(
      "code: max length %u bits, %zu LUT rows; %.4f bits/weight (entropy %.4f); "
      "%llu chunks\n",
      plan->code.max_length, plan->luts.size() / 256,
      static_cast<double>(plan->n_bits) / static_cast<double>(n), plan->entropy_bits,
      static_cast<unsigned long long>(plan->n_chunks()));
  std::printf(
      "compressed: %.4f of BF16 size\n",
      (plan->n_bytes + n + plan->gaps_bytes + plan->output_positions_bytes + plan->luts.size()) /
          (2.0 * n));
  return 0;
}
