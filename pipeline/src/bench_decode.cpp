// df11 bench decode (see bench_cmd.h).
#include "df11/bench_decode.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "df11/decoder.h"
#include "df11/encoder.h"
#include "thread_limit.h"
#if DF11_HAVE_CUDA
#include "cuda_benchmark.h"
#include "df11/cuda_decoder.h"
#endif

namespace df11::app {
namespace {

using Clock = std::chrono::steady_clock;

// Weights per RNG stream: any chunk is generated alone, so the bytes do not depend on the
// thread count.
constexpr uint64_t kChunk = uint64_t{1} << 16;
// About 1 weight in 100k is an outlier, scaled by 20..100 (trained LLM weights have them).
constexpr double kOutlierRate = 1e-5;

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double unit_open0(uint64_t r) { return (static_cast<double>(r >> 11) + 1.0) * 0x1.0p-53; }

uint16_t bf16_round(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// N(0, std^2) by Box-Muller from a counter-based stream; never +-0 (the workload has none).
void generate(std::span<uint16_t> out, double stddev, uint64_t stream) {
  uint64_t state = mix64(stream);
  auto next = [&] { return mix64(state += 0x9E3779B97F4A7C15ull); };
  for (size_t i = 0; i < out.size(); i += 2) {
    const double radius = std::sqrt(-2.0 * std::log(unit_open0(next())));
    const double angle = 6.283185307179586 * unit_open0(next());
    const double pair[2] = {radius * std::cos(angle), radius * std::sin(angle)};
    for (size_t k = 0; k < 2 && i + k < out.size(); ++k) {
      double x = pair[k] * stddev;
      const uint64_t lottery = next();
      if (unit_open0(lottery) < kOutlierRate) x *= 20.0 + 80.0 * unit_open0(mix64(lottery));
      uint16_t w = bf16_round(static_cast<float>(x));
      if ((w & 0x7FFF) == 0) w |= 0x0080;  // smallest normal instead of a zero
      out[i + k] = w;
    }
  }
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string with_commas(uint64_t v) {
  const std::string digits = std::to_string(v);
  std::string s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

double gbps(uint64_t bytes, double ms) { return ms > 0 ? bytes / (ms * 1e-3) / 1e9 : 0; }

using Json = nlohmann::ordered_json;

Json timing_json(double median, double min, double max) {
  return {{"median_ms", median}, {"min_ms", min}, {"max_ms", max}};
}

// The document's common part: command, device, options, workload.
Json report_json(const BenchDecodeOptions& o, const BenchWorkload& w, const std::string& device) {
  const GroupView g = w.group.view();
  Json members = Json::array();
  for (const auto& m : w.members) {
    members.push_back({{"name", m.name}, {"rows", m.rows}, {"cols", m.cols}});
  }
  const uint64_t stored = g.luts.size() + g.n_bytes() + g.n_elements() + g.output_positions.size() +
                          g.gaps.size() + g.split_positions.size();
  return {{"command", "bench decode"},
          {"ok", true},
          {"device", device},
          {"runs", o.runs},
          {"warmup", o.warmup},
          {"seed", o.seed},
          {"workload",
           {{"members", members},
            {"weights", g.n_elements()},
            {"bf16_bytes", 2 * g.n_elements()},
            {"coded_bytes", stored},
            {"blocks", g.n_blocks()},
            {"generate_seconds", w.generate_seconds},
            {"encode_seconds", w.encode_seconds}}}};
}

// The threads decode_group runs on: --threads (TBB's global limit) within this arena.
size_t cpu_threads() {
  return std::min<size_t>(allowed_threads(),
                          static_cast<size_t>(tbb::this_task_arena::max_concurrency()));
}

Status bench_cpu(const BenchDecodeOptions& o, const BenchWorkload& w, std::ostream& out) {
  const GroupView g = w.group.view();
  DF11_ASSIGN_OR_RETURN(const GroupInfo info, validate_group(g, "bench"));
  std::vector<uint16_t> decoded(g.n_elements());
  std::vector<double> ms;
  for (int i = 0; i < o.warmup + o.runs; ++i) {
    const auto t0 = Clock::now();
    DF11_RETURN_IF_ERROR(decode_group(g, decoded, "bench", 0, &info));
    const double t = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (i >= o.warmup) ms.push_back(t);
  }
  if (decoded != w.weights) return Status(ErrorCode::kMismatch, "bench: cpu decode differs");
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  const size_t threads = cpu_threads();
  if (o.json) {
    Json doc = report_json(o, w, "cpu");
    doc["threads"] = threads;
    doc["decode"] = timing_json(median, ms.front(), ms.back());
    doc["decode"]["bf16_gbps"] = gbps(2 * g.n_elements(), median);
    doc["verified"] = true;
    out << doc.dump(2) << "\n";
    return Status::ok();
  }
  print_bench_workload(w, out);
  out << "device: cpu (" << threads << (threads == 1 ? " thread)\n" : " threads)\n");
  out << "decode (decode_group)   " << fmt("%9.3f", median) << " ms median (min "
      << fmt("%.3f", ms.front()) << ", max " << fmt("%.3f", ms.back()) << ")  "
      << fmt("%7.1f", gbps(2 * g.n_elements(), median)) << " GB/s of BF16\n";
  out << "verified: bit-exact, " << with_commas(g.n_elements()) << " weights\n";
  return Status::ok();
}

#if DF11_HAVE_CUDA
Status bench_cuda(const BenchDecodeOptions& o, const BenchWorkload& w, std::ostream& out) {
  const GroupView g = w.group.view();
  const std::span<const uint16_t> expected(w.weights);
  cuda::DecodeBenchmarkOptions bo;
  bo.warmup = o.warmup;
  bo.runs = o.runs;
  bo.model_copies = o.model_blocks;
  DF11_ASSIGN_OR_RETURN(const cuda::DecodeBenchmarkReport r,
                        cuda::run_decode_benchmark(std::span(&g, 1), std::span(&expected, 1), bo));
  if (o.json) {
    const auto timing = [&](const cuda::TimingMs& t, uint64_t bytes) {
      Json j = timing_json(t.median, t.min, t.max);
      j["gbps"] = gbps(bytes, t.median);
      return j;
    };
    Json doc = report_json(o, w, "cuda");
    doc["gpu"] = {{"name", r.device_name},
                  {"sm_count", r.sm_count},
                  {"peak_dram_gbps", r.peak_dram_gbps},
                  {"grid", r.grid_size},
                  {"shared_bytes", r.shared_bytes},
                  {"configuration", r.compact ? "compact" : "fast"}};
    doc["decode"] = timing(r.decode, r.output_bytes);
    doc["decode_compact"] = timing(r.decode_compact, r.output_bytes);
    doc["copy"] = timing(r.copy, r.output_bytes);
    doc["dram_bytes"] = r.input_bytes + r.output_bytes;
    doc["verified"] = true;
    if (r.model_copies > 0) {
      doc["model"] = {{"blocks", r.model_copies},
                      {"all_blocks", timing(r.model_sequential, r.model_copies * r.output_bytes)},
                      {"per_launch_ms", r.model_per_launch_ms},
                      {"launch_overhead_ms", r.model_launch_overhead_ms}};
      if (r.model_batched_run) {
        doc["model"]["one_launch"] = timing(r.model_batched, r.model_copies * r.output_bytes);
      }
    }
    out << doc.dump(2) << "\n";
    return Status::ok();
  }
  print_bench_workload(w, out);
  out << "device: " << r.device_name << " (" << r.sm_count << " SMs, DRAM peak "
      << fmt("%.0f", r.peak_dram_gbps) << " GB/s); grid " << r.grid_size << " x 512 threads, "
      << r.shared_bytes << " B dynamic shared memory, " << (r.compact ? "compact" : "fast")
      << " configuration\n";
  auto line = [&](const char* what, const cuda::TimingMs& t, uint64_t bytes, const char* unit) {
    out << what << fmt("%9.3f", t.median) << " ms median (min " << fmt("%.3f", t.min) << ", max "
        << fmt("%.3f", t.max) << ")  " << fmt("%7.1f", gbps(bytes, t.median)) << unit << "\n";
  };
  line("decode (one launch)     ", r.decode, r.output_bytes, " GB/s of BF16");
  line("decode, compact kernel  ", r.decode_compact, r.output_bytes, " GB/s of BF16");
  line("device-to-device copy   ", r.copy, r.output_bytes, " GB/s (same BF16 bytes)");
  out << "decode moves " << fmt("%.1f", (r.input_bytes + r.output_bytes) / 1e6)
      << " MB (inputs + BF16 output): "
      << fmt("%.0f", gbps(r.input_bytes + r.output_bytes, r.decode.median))
      << " GB/s of DRAM traffic\n";
  out << "verified: bit-exact, " << with_commas(r.elements) << " weights\n";
  if (r.model_copies > 0) {
    out << "inference pattern: " << r.model_copies
        << " blocks (device copies), one launch each, into one reused buffer:\n";
    line("  all blocks            ", r.model_sequential, r.model_copies * r.output_bytes,
         " GB/s of BF16");
    out << "  per launch            " << fmt("%9.3f", r.model_per_launch_ms)
        << " ms; overhead vs one timed launch " << fmt("%+.4f", r.model_launch_overhead_ms)
        << " ms\n";
    if (r.model_batched_run) {
      line("  all blocks, 1 launch  ", r.model_batched, r.model_copies * r.output_bytes,
           " GB/s of BF16");
    }
  }
  return Status::ok();
}
#endif

// The device the options ask for, if usable here.
Result<bool> use_cuda(const BenchDecodeOptions& o) {
#if DF11_HAVE_CUDA
  std::string why;
  const bool have = cuda::device_available(&why);
  if (o.device == DeviceChoice::kAuto) return have;
  if (o.device == DeviceChoice::kCuda && !have) {
    return Status(ErrorCode::kUnsupported, "bench decode --device cuda: " + why);
  }
  return o.device == DeviceChoice::kCuda;
#else
  if (o.device == DeviceChoice::kCuda) {
    return Status(ErrorCode::kUnsupported,
                  "bench decode --device cuda: this df11 was built without CUDA");
  }
  return false;
#endif
}

Status check_options(const BenchDecodeOptions& o) {
  if (o.runs < 1 || o.warmup < 0 || o.hidden == 0 || o.intermediate == 0 || o.kv_dim == 0) {
    return Status(ErrorCode::kInvalidArgument,
                  "bench decode: --runs must be >= 1, --warmup >= 0 and the dimensions > 0");
  }
  return Status::ok();
}

Status bench_decode_limited(const BenchDecodeOptions& o, const BenchWorkload& w,
                            std::ostream& out) {
  DF11_RETURN_IF_ERROR(check_options(o));
  DF11_ASSIGN_OR_RETURN([[maybe_unused]] const bool cuda, use_cuda(o));  // unused without CUDA
#if DF11_HAVE_CUDA
  if (cuda) return bench_cuda(o, w, out);
#endif
  return bench_cpu(o, w, out);
}

}  // namespace

void print_bench_workload(const BenchWorkload& w, std::ostream& out) {
  const GroupView g = w.group.view();
  Result<GroupInfo> info = validate_group(g, "bench");
  const uint64_t stored = g.luts.size() + g.n_bytes() + g.n_elements() + g.output_positions.size() +
                          g.gaps.size() + g.split_positions.size();
  const bool llama8b = w.members.size() == 7 && w.members[0].rows == 4096 &&
                       w.members[1].rows == 1024 && w.members[4].rows == 14336;
  out << "workload: " << (llama8b ? "Llama-3.1-8B" : "Llama") << "-shaped block as one group of "
      << w.members.size() << " members (";
  for (size_t i = 0; i < w.members.size(); ++i) {
    out << (i ? ", " : "") << w.members[i].rows << "x" << w.members[i].cols;
  }
  out << "), " << with_commas(g.n_elements()) << " weights, "
      << fmt("%.1f", 2.0 * g.n_elements() / 1e6) << " MB BF16\n";
  out << "coded: " << fmt("%.1f", stored / 1e6) << " MB ("
      << fmt("%.2f", 100.0 * stored / (2.0 * g.n_elements())) << "% of BF16, "
      << fmt("%.3f", 8.0 * g.n_bytes() / g.n_elements()) << " bits/exponent), "
      << with_commas(g.n_blocks()) << " blocks, max "
      << (info.is_ok() ? with_commas(info->max_block_weights) : "?") << " weights/block\n";
  out << "generated in " << fmt("%.2f", w.generate_seconds) << " s, encoded in "
      << fmt("%.2f", w.encode_seconds) << " s\n";
}

Status check_bench_options(const BenchDecodeOptions& o) {
  DF11_RETURN_IF_ERROR(check_options(o));
  return use_cuda(o).status();
}

Result<BenchWorkload> make_bench_workload(const BenchDecodeOptions& o) {
  try {
    ThreadLimit limit(o.threads);
    BenchWorkload w;
    const uint64_t h = o.hidden, m = o.intermediate, kv = o.kv_dim;
    w.members = {{"self_attn.q_proj", h, h},  {"self_attn.k_proj", kv, h},
                 {"self_attn.v_proj", kv, h}, {"self_attn.o_proj", h, h},
                 {"mlp.gate_proj", m, h},     {"mlp.up_proj", m, h},
                 {"mlp.down_proj", h, m}};
    uint64_t total = 0;
    for (const auto& mem : w.members) total += mem.rows * mem.cols;
    if (total > UINT32_MAX) {
      return Status(ErrorCode::kInvalidArgument,
                    "bench decode: the block has " + std::to_string(total) +
                        " weights, more than one group holds (2^32 - 1)");
    }
    w.weights.resize(total);
    const auto t0 = Clock::now();
    uint64_t at = 0;
    for (size_t k = 0; k < w.members.size(); ++k) {
      const auto& mem = w.members[k];
      const uint64_t n = mem.rows * mem.cols;
      const double stddev = 0.5 / std::sqrt(static_cast<double>(mem.cols));  // fan_in = cols
      uint16_t* base = w.weights.data() + at;
      tbb::parallel_for(tbb::blocked_range<uint64_t>(0, (n + kChunk - 1) / kChunk),
                        [&](const tbb::blocked_range<uint64_t>& r) {
                          for (uint64_t c = r.begin(); c < r.end(); ++c) {
                            const uint64_t first = c * kChunk;
                            generate(std::span(base + first, std::min(kChunk, n - first)), stddev,
                                     mix64(o.seed) ^ mix64((k + 1) << 40 | c));
                          }
                        });
      at += n;
    }
    const auto t1 = Clock::now();
    std::vector<std::span<const uint16_t>> spans;
    at = 0;
    for (const auto& mem : w.members) {
      spans.emplace_back(w.weights.data() + at, mem.rows * mem.cols);
      at += mem.rows * mem.cols;
    }
    DF11_ASSIGN_OR_RETURN(w.group, encode_group(spans));
    const auto t2 = Clock::now();
    w.generate_seconds = std::chrono::duration<double>(t1 - t0).count();
    w.encode_seconds = std::chrono::duration<double>(t2 - t1).count();
    return w;
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, "bench decode: out of memory for the workload");
  }
}

Status bench_decode_workload(const BenchDecodeOptions& o, const BenchWorkload& w,
                             std::ostream& out) {
  return run_with_thread_limit(o.threads, [&] { return bench_decode_limited(o, w, out); });
}

}  // namespace df11::app
