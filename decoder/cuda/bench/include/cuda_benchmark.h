// Timing of the CUDA decoder on caller-provided groups, for `df11 bench decode --device cuda`
// and bench/cuda_decode_bench. Host API (no CUDA headers). Allocates device memory and
// synchronises freely: it is a measuring tool, not a decode path. Not part of the public
// API or of libdf11: target df11_cuda_bench (decoder/cuda/bench/), which pipeline/
// (bench_decode.cpp) links.
//
// Every time is the median (and min/max) over `runs` repetitions timed with CUDA events on
// one stream after `warmup` untimed repetitions; GB/s count the BF16 bytes written
// (2 bytes per weight), as the published figures for DF11 decoders do.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "df11/group.h"
#include "df11/status.h"

namespace df11::cuda {

struct DecodeBenchmarkOptions {
  int warmup = 5;
  int runs = 20;
  // Inference pattern: the groups are copied `model_copies` times on the device (e.g. 32
  // transformer blocks) and decoded copy after copy, one launch per copy, into one reused
  // output buffer; 0 skips it. Also times all copies as one batched launch when memory allows.
  uint32_t model_copies = 0;
};

struct TimingMs {
  double median = 0, min = 0, max = 0;
};

struct DecodeBenchmarkReport {
  std::string device_name;  // from cudaGetDeviceProperties, e.g. "NVIDIA H100 80GB HBM3"
  int sm_count = 0;
  double peak_dram_gbps = 0;  // 2 * memory clock * bus width, from the device properties
  uint64_t elements = 0;      // weights decoded by one launch
  uint64_t output_bytes = 0;  // 2 * elements
  uint64_t input_bytes = 0;   // all six arrays of all groups
  uint32_t grid_size = 0;     // thread blocks of the decode launch
  uint32_t shared_bytes = 0;  // dynamic shared memory per thread block

  bool compact = false;     // kernel configuration chosen for `decode` (KernelChoice)
  TimingMs decode;          // all groups, one plan: one launch (per 256 groups)
  TimingMs decode_compact;  // the same with KernelChoice::kCompact
  TimingMs copy;            // cudaMemcpyAsync device-to-device of output_bytes
  bool verified = false;    // every decoded weight compared with `expected`

  uint32_t model_copies = 0;
  TimingMs model_sequential;            // model_copies launches into one reused buffer
  double model_per_launch_ms = 0;       // model_sequential.median / model_copies
  double model_launch_overhead_ms = 0;  // model_per_launch_ms - decode.median
  TimingMs model_batched;               // all copies in one plan (zero if memory did not allow)
  bool model_batched_run = false;
};

// Decodes `groups` (host copies, validated here) on the current device. If `expected` is
// not empty it holds one span per group with the original weights (members concatenated) and
// every decoded output is compared with it bit for bit: a difference is kMismatch.
Result<DecodeBenchmarkReport> run_decode_benchmark(
    std::span<const GroupView> groups, std::span<const std::span<const uint16_t>> expected,
    const DecodeBenchmarkOptions& options);

}  // namespace df11::cuda
