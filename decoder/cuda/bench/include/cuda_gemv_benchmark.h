// Timing of the fused decode+GEMV (df11/cuda_gemv.h) against cuBLAS on one group, for
// `df11 bench gemv` and bench/df11-cuda-bench (BENCHMARKS.md, "GPU GEMV"). Host API (no CUDA
// headers). Allocates device memory and synchronises freely: a measuring tool. Not part of
// the public API or of libdf11 (target df11_cuda_bench, decoder/cuda/bench/).
//
// y = W x for every member of the group (W row-major [rows, cols]) at each batch, four ways:
// cuBLAS BF16 GEMM from the original weights, df11 decode of the group + the same cuBLAS
// calls, the fused kernel straight from the coded group, and the reference BF16 GEMV (the
// fused kernel's accumulation order). Each is the CUDA-event median of `runs` after `warmup`
// untimed runs, on one stream. The fused output is compared bit for bit with the reference
// run on the GPU-decoded weights, and its distance from cuBLAS is measured in BF16 ulps.
// Then the model line at batch 1: `model_blocks` device copies of the group (the blocks of a
// model), cuBLAS over their BF16 weights vs decode + cuBLAS and the fused kernel, one launch
// per block and one for all. cuBLAS is loaded at run time (libcublas.so of the CUDA major the
// library was built with), so nothing else of df11 depends on it: kUnsupported if absent.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cuda_benchmark.h"  // TimingMs
#include "df11/group.h"
#include "df11/status.h"

namespace df11::cuda {

struct GemvBenchmarkShape {
  uint32_t rows = 0, cols = 0;  // one member of the group, in order; they tile the group
};

struct GemvBenchmarkOptions {
  int warmup = 5;
  int runs = 20;
  std::vector<uint32_t> batches = {1, 2, 4, 8, 16};  // each 1..16
  uint32_t model_blocks = 32;                        // 0 skips the model line
};

struct GemvBatchRow {
  uint32_t batch = 0;
  TimingMs cublas;                      // cuBLAS over the BF16 weights, every member
  TimingMs decode_cublas;               // df11 decode of the group, then the same cuBLAS calls
  TimingMs fused;                       // the fused decode+GEMV kernel
  TimingMs reference;                   // the reference GEMV over the BF16 weights
  bool fused_equals_reference = false;  // on the GPU-decoded weights, every output bit
  uint32_t max_ulp_vs_cublas = 0;       // fused vs cuBLAS, BF16 ulps
  double differ_vs_cublas = 0;          // fraction of outputs where they differ
};

struct GemvModelLine {
  uint32_t blocks = 0;
  TimingMs cublas;            // every block's members from BF16 weights
  TimingMs decode_cublas;     // per block: decode into one reused buffer, then cuBLAS
  TimingMs fused_per_block;   // one fused launch per block
  TimingMs fused_one_launch;  // one fused launch for every block
};

struct GemvBenchmarkReport {
  std::string device_name;  // e.g. "NVIDIA H100 80GB HBM3"
  int sm_count = 0;
  uint64_t weights = 0;      // of the group
  uint64_t coded_bytes = 0;  // the group's five device arrays
  std::vector<GemvBatchRow> rows;
  bool model_run = false;
  GemvModelLine model;
};

// Runs the benchmark on the current device for `group` (host copy; validated here), whose
// decoded weights are `weights` (the original BF16 patterns, checked against the GPU decode)
// and whose members are `shapes`. A fused output that differs from the reference is reported
// in its row (fused_equals_reference), not as an error: the caller decides.
Result<GemvBenchmarkReport> run_gemv_benchmark(const GroupView& group,
                                               std::span<const uint16_t> weights,
                                               std::span<const GemvBenchmarkShape> shapes,
                                               const GemvBenchmarkOptions& options);

}  // namespace df11::cuda
