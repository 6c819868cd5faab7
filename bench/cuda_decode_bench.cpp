// df11-cuda-bench: the `df11 bench decode --device cuda` workload and report, plus a cuBLAS
// BF16 batch-1 GEMV over the same seven matrices in the same run, for scale (what the
// decoded block is for), then the GEMV rows of `df11 bench gemv` (pipeline/bench_gemv.h:
// cuBLAS, decode + cuBLAS, fused decode+GEMV, reference GEMV at batch 1..16, and the model
// line). Results and the exact command: BENCHMARKS.md, "GPU decode" and "GPU GEMV".
//
//   df11-cuda-bench [--runs 20] [--warmup 5] [--model-blocks 32] [--seed 1] [--no-gemv]
//                   [--dump DIR]
//
// --dump DIR writes the group's six arrays and the original weights as raw files
// (DIR/<tensor>.bin), for comparing with other decoders outside this repository.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "df11/bench_decode.h"
#include "df11/bench_gemv.h"
#include "df11/cuda_decoder.h"

// On failure, print `what` and return false.
#define BENCH_CHECK(call, what)                 \
  do {                                          \
    if (!(call)) {                              \
      std::cerr << "error: " << (what) << "\n"; \
      return false;                             \
    }                                           \
  } while (0)

namespace {

using df11::app::BenchDecodeOptions;
using df11::app::BenchWorkload;

bool write_file(const std::filesystem::path& p, const void* data, size_t bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  return static_cast<bool>(f);
}

bool dump(const BenchWorkload& w, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const df11::GroupBuffers& g = w.group;
  for (const df11::GroupTensorSpec& t : df11::kGroupTensors) {
    const std::string name(t.name());
    const std::vector<uint8_t>& bytes = g.part(t.id);
    BENCH_CHECK(write_file(dir / (name + ".bin"), bytes.data(), bytes.size()), "writing " + name);
  }
  BENCH_CHECK(write_file(dir / "weights.bin", w.weights.data(), 2 * w.weights.size()),
              "writing weights");
  std::cout << "dumped the group to " << dir << "\n";
  return true;
}

// y = W x for each member (W row-major rows x cols, BF16; fp32 accumulation), all seven
// back to back per run; median of CUDA-event times.
bool bench_gemv(const BenchWorkload& w, int warmup, int runs) {
  cublasHandle_t handle;
  BENCH_CHECK(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
  void* d_w = nullptr;
  void* d_x = nullptr;
  void* d_y = nullptr;
  uint64_t max_dim = 0;
  for (const auto& m : w.members) max_dim = std::max({max_dim, m.rows, m.cols});
  BENCH_CHECK(cudaMalloc(&d_w, 2 * w.weights.size()) == cudaSuccess, "cudaMalloc weights");
  BENCH_CHECK(cudaMalloc(&d_x, 2 * max_dim) == cudaSuccess, "cudaMalloc x");
  BENCH_CHECK(cudaMalloc(&d_y, 2 * max_dim) == cudaSuccess, "cudaMalloc y");
  BENCH_CHECK(cudaMemcpy(d_w, w.weights.data(), 2 * w.weights.size(), cudaMemcpyHostToDevice) ==
                  cudaSuccess,
              "cudaMemcpy weights");
  std::vector<__nv_bfloat16> x(max_dim);
  for (uint64_t i = 0; i < max_dim; ++i)
    x[i] = __float2bfloat16(0.01f * static_cast<float>(i % 97));
  BENCH_CHECK(cudaMemcpy(d_x, x.data(), 2 * max_dim, cudaMemcpyHostToDevice) == cudaSuccess,
              "cudaMemcpy x");
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  const float alpha = 1.0f, beta = 0.0f;
  std::vector<float> ms;
  for (int r = 0; r < warmup + runs; ++r) {
    cudaEventRecord(start);
    uint64_t at = 0;
    for (const auto& m : w.members) {
      // Row-major W (rows x cols) is column-major W^T (cols x rows, ld = cols): y = (W^T)^T x.
      const auto st = cublasGemmEx(
          handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(m.rows), 1, static_cast<int>(m.cols),
          &alpha, static_cast<const uint16_t*>(d_w) + at, CUDA_R_16BF, static_cast<int>(m.cols),
          d_x, CUDA_R_16BF, static_cast<int>(m.cols), &beta, d_y, CUDA_R_16BF,
          static_cast<int>(m.rows), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      BENCH_CHECK(st == CUBLAS_STATUS_SUCCESS, "cublasGemmEx");
      at += m.rows * m.cols;
    }
    cudaEventRecord(stop);
    BENCH_CHECK(cudaEventSynchronize(stop) == cudaSuccess, "GEMV run");
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    if (r >= warmup) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  char line[200];
  std::snprintf(line, sizeof line,
                "cuBLAS BF16 GEMV x7     %9.3f ms median (min %.3f, max %.3f)  %7.1f GB/s of "
                "BF16 weights read\n",
                median, ms.front(), ms.back(), 2.0 * w.weights.size() / (median * 1e-3) / 1e9);
  std::cout << line;
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(d_w);
  cudaFree(d_x);
  cudaFree(d_y);
  cublasDestroy(handle);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"df11-cuda-bench: DF11 GPU decode of a Llama-3.1-8B block vs copy and GEMV"};
  BenchDecodeOptions o;
  o.device = df11::app::DeviceChoice::kCuda;
  bool no_gemv = false;
  std::string dump_dir;
  app.add_option("--runs", o.runs, "timed runs (medians)");
  app.add_option("--warmup", o.warmup, "untimed runs first");
  app.add_option("--model-blocks", o.model_blocks, "blocks of the inference pattern (0: skip)");
  app.add_option("--seed", o.seed, "workload seed");
  app.add_flag("--no-gemv", no_gemv, "skip the cuBLAS GEMV and the GEMV rows");
  app.add_option("--dump", dump_dir, "write the group and weights as raw files here");
  CLI11_PARSE(app, argc, argv);

  std::string why;
  if (!df11::cuda::device_available(&why)) {
    std::cerr << "error: no usable CUDA device: " << why << "\n";
    return 3;
  }
  // The CLI's report first (workload, decode, copy, inference pattern), then GEMV.
  df11::Result<BenchWorkload> w = df11::app::make_bench_workload(o);
  df11::Status s = w.is_ok() ? df11::app::bench_decode_workload(o, *w, std::cout) : w.status();
  if (!s.is_ok()) {
    std::cerr << "error: " << s.to_string() << "\n";
    return 1;
  }
  if (!no_gemv && !bench_gemv(*w, o.warmup, o.runs)) return 1;
  if (!no_gemv) {
    df11::app::BenchGemvOptions g;
    g.block = o;
    s = df11::app::bench_gemv_workload(g, *w, std::cout);
    if (!s.is_ok()) {
      std::cerr << "error: " << s.to_string() << "\n";
      return 1;
    }
  }
  if (!dump_dir.empty() && !dump(*w, dump_dir)) return 1;
  return 0;
}
