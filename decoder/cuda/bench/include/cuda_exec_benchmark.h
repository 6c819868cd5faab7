// Timing of the execution layout (df11/cuda_exec.h) against cuBLAS on one DF11 group, for
// `df11 bench gemv` and df11-cuda-bench (BENCHMARKS.md, "Execution layout"). Host API (no CUDA
// headers). Allocates device memory and synchronises freely: a measuring tool. A
// benchmark-support header, not part of the public API (decoder/cuda/support/).
//
// The group is transcoded DF11 -> execution layout on the GPU (decode into a scratch copy,
// measure, pack; timed) and decoded back to BF16 (timed; checked bit for bit against the
// original weights; the GPU tests check the blobs against the CPU encoder). Then Y = X W^T for
// every member at each batch: cuBLAS BF16 GEMM from the original weights, the fused GEMM from the
// blobs, and the reference GEMM on the BF16 weights (the fused GEMM's products and order): fused ==
// reference bit for bit is checked, the distance from cuBLAS is measured in BF16 ulps. Then the
// model line at batch 1 over `model_blocks` device copies. CUDA-event medians of `runs` after
// `warmup` untimed runs; cuBLAS loaded at run time (kUnsupported if absent).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cuda_benchmark.h"       // TimingMs
#include "cuda_gemv_benchmark.h"  // GemvBenchmarkShape
#include "df11/group.h"
#include "df11/status.h"

namespace df11::cuda {

struct ExecBenchmarkOptions {
  int warmup = 5;
  int runs = 20;
  std::vector<uint32_t> batches = {1, 2, 4, 8, 16};  // each 1..16
  uint32_t model_blocks = 32;                        // 0 skips the model line
};

struct ExecBatchRow {
  uint32_t batch = 0;
  TimingMs cublas;                     // cuBLAS over the BF16 weights, every member
  TimingMs exec;                       // the fused GEMM from the execution layout
  TimingMs reference;                  // the reference GEMM on the BF16 weights
  bool exec_equals_reference = false;  // every output bit
  uint32_t max_ulp_vs_cublas = 0;      // fused vs cuBLAS, BF16 ulps
  double differ_vs_cublas = 0;         // fraction of outputs where they differ
};

struct ExecModelLine {
  uint32_t blocks = 0;
  TimingMs cublas;          // every block's members from BF16 weights
  TimingMs exec_per_block;  // one launch_exec_gemm per block
  TimingMs exec_one_call;   // one launch_exec_gemm for every block's matrices
};

struct ExecBenchmarkReport {
  std::string device_name;
  uint64_t weights = 0;
  uint64_t exec_bytes = 0;  // the members' blobs together
  uint64_t exceptions = 0;
  TimingMs transcode;          // DF11 group -> blobs: decode, measure (syncs), pack
  TimingMs pack;               // the pack alone
  TimingMs to_bf16;            // blobs -> BF16, every member
  TimingMs copy;               // device-to-device copy of the BF16 bytes, for scale
  bool to_bf16_exact = false;  // equals the original weights
  std::vector<ExecBatchRow> rows;
  bool model_run = false;
  ExecModelLine model;
};

// Runs it on the current device for `group` (host copy; validated), whose decoded weights are
// `weights` and whose members are `shapes`. Mismatches are reported in the report's flags,
// not as errors: the caller decides.
Result<ExecBenchmarkReport> run_exec_benchmark(const GroupView& group,
                                               std::span<const uint16_t> weights,
                                               std::span<const GemvBenchmarkShape> shapes,
                                               const ExecBenchmarkOptions& options);

}  // namespace df11::cuda
