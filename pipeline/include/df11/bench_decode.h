// df11 bench decode: decode speed on a synthetic Llama-3.1-8B transformer block coded as ONE
// group (q, k, v, o, gate, up, down: 218,103,808 weights), the shape inference engines decode
// just before each block's matmuls. Weights are Gaussian-like BF16 (std 0.5/sqrt(fan_in),
// about 1 in 100k an outlier, no zeros), generated deterministically from --seed.
//
//   df11 bench decode [--device auto|cuda|cpu] [--runs 20] [--warmup 5] [--model-blocks 32]
//                     [--seed 1] [--hidden 4096] [--intermediate 14336] [--kv-dim 1024]
//                     [--threads N] [--json]
//
// auto (the default, as verify's): CUDA when a device is usable, else the CPU.
//
// cuda: one launch decodes the whole block; times are CUDA-event medians after warm-up,
// beside a device-to-device copy of the same BF16 bytes; then the inference pattern: the
// block copied --model-blocks times on the device and decoded one launch per block into one
// reused buffer. cpu: df11::decode_group on all cores (or --threads), wall-clock medians.
// Every run's output is checked bit for bit against the generated weights.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "df11/group.h"
#include "df11/status.h"
#include "df11/verify.h"  // DeviceChoice

namespace df11::app {

struct BenchDecodeOptions {
  DeviceChoice device = DeviceChoice::kAuto;
  int warmup = 5;
  int runs = 20;               // medians over these (>= 1)
  uint32_t model_blocks = 32;  // cuda only; 0 skips the inference pattern
  uint64_t seed = 1;
  // Llama-3.1-8B: hidden 4096, MLP 14336, 8 KV heads of 128 (k and v are kv_dim x hidden).
  uint32_t hidden = 4096;
  uint32_t intermediate = 14336;
  uint32_t kv_dim = 1024;
  int threads = 0;    // CPU threads for generation, encoding and the cpu device (0 = all)
  bool json = false;  // bench_decode_workload: one JSON document instead of the text report
};

// The block's tensors and the group coding them.
struct BenchWorkload {
  struct Member {
    std::string name;  // "self_attn.q_proj"
    uint64_t rows = 0, cols = 0;
  };
  std::vector<Member> members;
  std::vector<uint16_t> weights;  // members concatenated, row-major
  GroupBuffers group;
  double generate_seconds = 0, encode_seconds = 0;
};

// kInvalidArgument for unusable options, kUnsupported if the device is cuda and no CUDA
// device is usable: cheap, for a front end to check before minutes of generating.
Status check_bench_options(const BenchDecodeOptions& options);

// Generates and encodes the workload (deterministic for the options' seed and shapes).
Result<BenchWorkload> make_bench_workload(const BenchDecodeOptions& options);

// The workload's shape, coded size and generation times (the first lines of the report).
void print_bench_workload(const BenchWorkload& workload, std::ostream& out);

// Prints the workload and times its decode on the options' device (report on `out`: text,
// or with options.json one document {"command": "bench decode", "ok", "device", "threads",
// "runs", "warmup", "seed", "workload", "decode", ... "verified"}).
// kUnsupported if the device is cuda and no CUDA device is usable (or no CUDA build).
Status bench_decode_workload(const BenchDecodeOptions& options, const BenchWorkload& workload,
                             std::ostream& out);

}  // namespace df11::app
