// df11 bench gemv (bench_gemv.h): the report of cuda::run_gemv_benchmark, as text or JSON.
#include "df11/bench_gemv.h"

#include <cstdarg>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "thread_limit.h"
#if DF11_HAVE_CUDA
#include "bench_exec_rows.h"
#include "cuda_gemv_benchmark.h"
#include "df11/cuda_decoder.h"
#endif

namespace df11::app {
namespace {

Status check_options(const BenchGemvOptions& o) {
  const BenchDecodeOptions& b = o.block;
  if (b.runs < 1 || b.warmup < 0 || b.hidden == 0 || b.intermediate == 0 || b.kv_dim == 0) {
    return Status(ErrorCode::kInvalidArgument,
                  "bench gemv: --runs must be >= 1, --warmup >= 0 and the dimensions > 0");
  }
  if (o.batches.empty()) return Status(ErrorCode::kInvalidArgument, "bench gemv: no --batch");
  for (const uint32_t n : o.batches) {
    if (n < 1 || n > 16) {
      return Status(ErrorCode::kInvalidArgument,
                    "bench gemv: --batch " + std::to_string(n) + " is not within 1..16");
    }
  }
  return Status::ok();
}

#if DF11_HAVE_CUDA
std::string line(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string line(const char* format, ...) {
  char buf[400];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

nlohmann::ordered_json timing(const cuda::TimingMs& t) {
  return {{"median_ms", t.median}, {"min_ms", t.min}, {"max_ms", t.max}};
}

void print_json(const BenchGemvOptions& o, const BenchWorkload& w,
                const cuda::GemvBenchmarkReport& r, const cuda::ExecBenchmarkReport& e,
                std::ostream& out) {
  nlohmann::ordered_json members = nlohmann::ordered_json::array();
  for (const auto& m : w.members) {
    members.push_back({{"name", m.name}, {"rows", m.rows}, {"cols", m.cols}});
  }
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const cuda::GemvBatchRow& row : r.rows) {
    rows.push_back({{"batch", row.batch},
                    {"cublas", timing(row.cublas)},
                    {"decode_cublas", timing(row.decode_cublas)},
                    {"fused", timing(row.fused)},
                    {"reference", timing(row.reference)},
                    {"fused_vs_cublas", row.fused.median / row.cublas.median},
                    {"fused_equals_reference", row.fused_equals_reference},
                    {"max_ulp_vs_cublas", row.max_ulp_vs_cublas},
                    {"differ_vs_cublas", row.differ_vs_cublas}});
  }
  bool ok = true;
  for (const cuda::GemvBatchRow& row : r.rows) ok = ok && row.fused_equals_reference;
  ok = ok && exec_rows_ok(e);
  nlohmann::ordered_json doc = {{"command", "bench gemv"},
                                {"ok", ok},
                                {"device", r.device_name},
                                {"sm_count", r.sm_count},
                                {"runs", o.block.runs},
                                {"warmup", o.block.warmup},
                                {"seed", o.block.seed},
                                {"workload",
                                 {{"members", members},
                                  {"weights", r.weights},
                                  {"bf16_bytes", 2 * r.weights},
                                  {"coded_bytes", r.coded_bytes}}},
                                {"rows", rows}};
  if (r.model_run) {
    doc["model"] = {{"blocks", r.model.blocks},
                    {"batch", 1},
                    {"cublas", timing(r.model.cublas)},
                    {"decode_cublas", timing(r.model.decode_cublas)},
                    {"fused_per_block", timing(r.model.fused_per_block)},
                    {"fused_one_launch", timing(r.model.fused_one_launch)}};
  }
  doc["exec"] = exec_rows_json(e);
  out << doc.dump(2) << "\n";
}

void print_text(const BenchGemvOptions& o, const BenchWorkload& w,
                const cuda::GemvBenchmarkReport& r, std::ostream& out) {
  print_bench_workload(w, out);
  out << "device: " << r.device_name << " (" << r.sm_count << " SMs)\n";
  out << line(
      "GEMV rows (y = W x for all %zu matrices; ms, CUDA-event median of %d runs after "
      "%d warm-up)\n",
      w.members.size(), o.block.runs, o.block.warmup);
  out << "  batch  cuBLAS BF16  decode+cuBLAS   fused (x cuBLAS)   reference  fused==ref  "
         "max ulp vs cuBLAS\n";
  for (const cuda::GemvBatchRow& row : r.rows) {
    out << line(
        "  %5u  %11.3f  %13.3f  %7.3f (%5.2fx)  %10.3f  %10s  %u (%.2f%% of outputs "
        "differ)\n",
        row.batch, row.cublas.median, row.decode_cublas.median, row.fused.median,
        row.fused.median / row.cublas.median, row.reference.median,
        row.fused_equals_reference ? "yes" : "NO", row.max_ulp_vs_cublas,
        100.0 * row.differ_vs_cublas);
    out << line(
        "         min/max: cuBLAS %.3f/%.3f, decode+cuBLAS %.3f/%.3f, fused %.3f/%.3f, "
        "reference %.3f/%.3f\n",
        row.cublas.min, row.cublas.max, row.decode_cublas.min, row.decode_cublas.max, row.fused.min,
        row.fused.max, row.reference.min, row.reference.max);
  }
  if (!r.model_run) return;
  const cuda::GemvModelLine& m = r.model;
  out << line("Model line: %u blocks at batch 1 (%.1f GB of BF16 weights; ms, median of %d)\n",
              m.blocks, 2.0 * static_cast<double>(r.weights) * m.blocks / 1e9, o.block.runs);
  const auto item = [&](const char* what, const cuda::TimingMs& t, bool ratio) {
    out << line("  %-26s %8.3f (min %.3f, max %.3f)", what, t.median, t.min, t.max);
    if (ratio) out << line("  %.2fx cuBLAS", t.median / m.cublas.median);
    out << "\n";
  };
  item("cuBLAS BF16 GEMV", m.cublas, false);
  item("df11 decode + cuBLAS GEMV", m.decode_cublas, false);
  item("fused, one launch/block", m.fused_per_block, true);
  item("fused, one launch", m.fused_one_launch, true);
}
#endif

}  // namespace

Result<std::vector<uint32_t>> parse_batch_list(const std::string& text) {
  std::vector<uint32_t> out;
  std::set<uint32_t> seen;
  size_t at = 0;
  while (true) {
    const size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? comma : comma - at);
    const bool digits = !item.empty() && item.size() <= 2 &&
                        item.find_first_not_of("0123456789") == std::string::npos;
    const uint32_t n = digits ? static_cast<uint32_t>(std::stoul(item)) : 0;
    if (n < 1 || n > 16) {
      return Status(ErrorCode::kInvalidArgument,
                    "--batch '" + text + "': '" + item + "' is not a batch size within 1..16");
    }
    if (!seen.insert(n).second) {
      return Status(ErrorCode::kInvalidArgument,
                    "--batch '" + text + "': " + item + " appears twice");
    }
    out.push_back(n);
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

Status check_bench_gemv_options(const BenchGemvOptions& o) {
  DF11_RETURN_IF_ERROR(check_options(o));
#if DF11_HAVE_CUDA
  std::string why;
  if (!cuda::device_available(&why)) {
    return Status(ErrorCode::kUnsupported, "bench gemv needs a CUDA GPU: " + why);
  }
  return Status::ok();
#else
  return Status(ErrorCode::kUnsupported,
                "bench gemv needs a CUDA GPU: this df11 was built without CUDA");
#endif
}

Status bench_gemv_workload(const BenchGemvOptions& o, const BenchWorkload& w, std::ostream& out) {
  DF11_RETURN_IF_ERROR(check_bench_gemv_options(o));
#if DF11_HAVE_CUDA
  ThreadLimit limit(o.block.threads);
  std::vector<cuda::GemvBenchmarkShape> shapes;
  for (const auto& m : w.members) {
    shapes.push_back({static_cast<uint32_t>(m.rows), static_cast<uint32_t>(m.cols)});
  }
  cuda::GemvBenchmarkOptions bo;
  bo.warmup = o.block.warmup;
  bo.runs = o.block.runs;
  bo.batches = o.batches;
  bo.model_blocks = o.block.model_blocks;
  DF11_ASSIGN_OR_RETURN(const cuda::GemvBenchmarkReport r,
                        cuda::run_gemv_benchmark(w.group.view(), w.weights, shapes, bo));
  // The execution layout's rows (BENCHMARKS.md, "Execution layout"), after the DF11 ones.
  cuda::ExecBenchmarkOptions eo;
  eo.warmup = bo.warmup;
  eo.runs = bo.runs;
  eo.batches = bo.batches;
  eo.model_blocks = bo.model_blocks;
  DF11_ASSIGN_OR_RETURN(const cuda::ExecBenchmarkReport e,
                        cuda::run_exec_benchmark(w.group.view(), w.weights, shapes, eo));
  if (o.json) {
    print_json(o, w, r, e, out);
  } else {
    print_text(o, w, r, out);
    print_exec_rows(e, o.block.runs, out);
  }
  DF11_RETURN_IF_ERROR(check_exec_rows(e));
  for (const cuda::GemvBatchRow& row : r.rows) {
    if (!row.fused_equals_reference) {
      return Status(ErrorCode::kMismatch,
                    "bench gemv: at batch " + std::to_string(row.batch) +
                        " the fused output differs from the reference GEMV on the decoded "
                        "weights");
    }
  }
  return Status::ok();
#else
  (void)w, (void)out;
  return Status(ErrorCode::kInternal, "bench gemv: unreachable without CUDA");
#endif
}

}  // namespace df11::app
