// The execution layout's rows of `df11 bench gemv` (bench_exec_rows.h).
#if DF11_HAVE_CUDA
#include "bench_exec_rows.h"

#include <cstdio>
#include <string>

namespace df11::app {
namespace {

nlohmann::ordered_json timing(const cuda::TimingMs& t) {
  return {{"median_ms", t.median}, {"min_ms", t.min}, {"max_ms", t.max}};
}

void put(std::ostream& out, const char* text) { out << text; }

}  // namespace

void print_exec_rows(const cuda::ExecBenchmarkReport& r, int runs, std::ostream& out) {
  char buf[400];
  const double w = static_cast<double>(r.weights);
  std::snprintf(
      buf, sizeof buf,
      "Execution layout (spec/EXEC_LAYOUT.md): %.1f MB for %.0f weights, %.3f bits per "
      "weight, %llu exceptions (%.2e per weight)\n",
      static_cast<double>(r.exec_bytes) / 1e6, w, 8.0 * static_cast<double>(r.exec_bytes) / w,
      static_cast<unsigned long long>(r.exceptions), static_cast<double>(r.exceptions) / w);
  put(out, buf);
  std::snprintf(buf, sizeof buf,
                "  transcode DF11 -> layout (decode, measure, pack) %8.3f ms  (pack alone %.3f; "
                "x32 blocks: %.1f ms)\n",
                r.transcode.median, r.pack.median, 32 * r.transcode.median);
  put(out, buf);
  std::snprintf(buf, sizeof buf,
                "  layout -> BF16                                  %8.3f ms  %.2f TB/s of BF16 "
                "(copy of the BF16 bytes %.3f ms), exact: %s\n",
                r.to_bf16.median, 2.0 * w / (r.to_bf16.median * 1e-3) / 1e12, r.copy.median,
                r.to_bf16_exact ? "yes" : "NO");
  put(out, buf);
  std::snprintf(buf, sizeof buf,
                "  Y = X W^T for all matrices (ms, CUDA-event median of %d)\n"
                "  batch  cuBLAS BF16  fused layout (x cuBLAS)  reference  fused==ref  max ulp "
                "vs cuBLAS\n",
                runs);
  put(out, buf);
  for (const cuda::ExecBatchRow& row : r.rows) {
    std::snprintf(buf, sizeof buf,
                  "  %5u  %11.3f  %12.3f (%5.2fx)  %10.3f  %10s  %u (%.2f%% of outputs differ)\n",
                  row.batch, row.cublas.median, row.exec.median,
                  row.exec.median / row.cublas.median, row.reference.median,
                  row.exec_equals_reference ? "yes" : "NO", row.max_ulp_vs_cublas,
                  100.0 * row.differ_vs_cublas);
    put(out, buf);
  }
  if (!r.model_run) return;
  const cuda::ExecModelLine& m = r.model;
  std::snprintf(buf, sizeof buf,
                "  model line, %u blocks at batch 1: cuBLAS %.3f ms, layout one call per block "
                "%.3f (%.2fx), one call %.3f (%.2fx)\n",
                m.blocks, m.cublas.median, m.exec_per_block.median,
                m.exec_per_block.median / m.cublas.median, m.exec_one_call.median,
                m.exec_one_call.median / m.cublas.median);
  put(out, buf);
}

nlohmann::ordered_json exec_rows_json(const cuda::ExecBenchmarkReport& r) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const cuda::ExecBatchRow& row : r.rows) {
    rows.push_back({{"batch", row.batch},
                    {"cublas", timing(row.cublas)},
                    {"fused", timing(row.exec)},
                    {"reference", timing(row.reference)},
                    {"fused_vs_cublas", row.exec.median / row.cublas.median},
                    {"fused_equals_reference", row.exec_equals_reference},
                    {"max_ulp_vs_cublas", row.max_ulp_vs_cublas},
                    {"differ_vs_cublas", row.differ_vs_cublas}});
  }
  nlohmann::ordered_json j = {
      {"bytes", r.exec_bytes},
      {"bits_per_weight", 8.0 * static_cast<double>(r.exec_bytes) / static_cast<double>(r.weights)},
      {"exceptions", r.exceptions},
      {"transcode", timing(r.transcode)},
      {"pack", timing(r.pack)},
      {"to_bf16", timing(r.to_bf16)},
      {"to_bf16_exact", r.to_bf16_exact},
      {"copy", timing(r.copy)},
      {"rows", rows}};
  if (r.model_run) {
    j["model"] = {{"blocks", r.model.blocks},
                  {"batch", 1},
                  {"cublas", timing(r.model.cublas)},
                  {"per_block", timing(r.model.exec_per_block)},
                  {"one_call", timing(r.model.exec_one_call)}};
  }
  return j;
}

bool exec_rows_ok(const cuda::ExecBenchmarkReport& r) { return check_exec_rows(r).is_ok(); }

Status check_exec_rows(const cuda::ExecBenchmarkReport& r) {
  if (!r.to_bf16_exact) {
    return Status(ErrorCode::kMismatch,
                  "bench gemv: the execution layout decodes to other weights than the block's");
  }
  for (const cuda::ExecBatchRow& row : r.rows) {
    if (!row.exec_equals_reference) {
      return Status(ErrorCode::kMismatch,
                    "bench gemv: at batch " + std::to_string(row.batch) +
                        " the execution layout's fused GEMM differs from its reference");
    }
  }
  return Status::ok();
}

}  // namespace df11::app
#endif
