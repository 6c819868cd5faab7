// df11 bench gemv: y = W x on the `df11 bench decode` workload (a synthetic Llama-3.1-8B block
// coded as one group) on the GPU, at several batches, four ways: cuBLAS BF16 GEMV from the
// original weights, df11 decode + cuBLAS, the fused decode+GEMV kernel, and the reference
// BF16 GEMV (df11/cuda_gemv.h); then the model line at batch 1 over --model-blocks device
// copies of the block (an 8B-shaped model): cuBLAS over the BF16 weights against the fused
// kernel, one launch per block and one for all. Then the same for the execution layout
// (cuda_exec_benchmark.h, BENCHMARKS.md "Execution layout"): transcode, layout -> BF16, its
// fused GEMM against cuBLAS per batch and the model line. CUDA-event medians after warm-up,
// the GPU named; each fused output is checked bit for bit against its reference
// (kMismatch otherwise) and its distance from cuBLAS given in BF16 ulps.
//
//   df11 bench gemv [--batch 1,2,4,8,16] [--runs 20] [--warmup 5] [--model-blocks 32]
//                   [--seed 1] [--hidden 4096] [--intermediate 14336] [--kv-dim 1024] [--json]
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "df11/bench_decode.h"
#include "df11/status.h"

namespace df11::app {

struct BenchGemvOptions {
  // The workload (shape, seed, threads) and the timing (runs, warmup, model_blocks); its
  // device is ignored: the GEMV benchmark is CUDA only.
  BenchDecodeOptions block;
  std::vector<uint32_t> batches = {1, 2, 4, 8, 16};
  bool json = false;  // one JSON document instead of the text report
};

// "1,2,4,8,16" -> {1, 2, 4, 8, 16}: each 1..16, at most once. kInvalidArgument naming the
// offending item otherwise.
Result<std::vector<uint32_t>> parse_batch_list(const std::string& text);

// kInvalidArgument for unusable options; kUnsupported without CUDA or without a usable CUDA
// device (saying which): cheap, for a front end to check before generating the workload.
Status check_bench_gemv_options(const BenchGemvOptions& options);

// Runs the benchmark on `workload` and prints the report (text or JSON, {"command": "bench
// gemv", "ok": ..., "device": ...}) on `out`. kMismatch, after the report (whose "ok" is then
// false), if a fused output differed from the reference.
Status bench_gemv_workload(const BenchGemvOptions& options, const BenchWorkload& workload,
                           std::ostream& out);

}  // namespace df11::app
