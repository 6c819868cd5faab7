// XXH3_64bits on the GPU (include/df11/cuda_hash.h), with the arithmetic of xxh3_core.h.
//
// One thread block per input. In round r, the 256 producer threads (8 warps) sum the terms of
// blocks [64 r, 64 r + 64) of the input, two (block, accumulator) items each, into one of two
// shared buffers, while lanes 0..7 of the last warp run the eight scramble chains over round
// r - 1's sums. The chains bound an input's time; the producers keep 128 KB of loads in
// flight, so that a round's loads take about as long as its chains.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_error.h"
#include "df11/cuda_hash.h"
#include "df11/hash.h"
#include "xxh3_core.h"

namespace df11::cuda {
namespace detail {
namespace {

constexpr uint32_t kProducers = 256;
constexpr uint32_t kThreads = kProducers + 32;
constexpr uint32_t kRoundBlocks = 64;  // (block, accumulator) items: 2 per producer
constexpr uint32_t kItemsPerProducer = kRoundBlocks * kXxh3Lanes / kProducers;

struct Input {
  const uint8_t* data;
  uint64_t bytes;
};

static_assert(sizeof(Input) == 16);

struct Params {
  uint8_t secret[kXxh3SecretSize];
  const Input* inputs;
  uint64_t* digests;
};

__global__ void __launch_bounds__(kThreads) xxh3_kernel(const __grid_constant__ Params p) {
  __shared__ uint64_t sums[2][kRoundBlocks][kXxh3Lanes];
  __shared__ uint8_t secret[kXxh3SecretSize];
  __shared__ uint64_t acc_out[kXxh3Lanes];
  for (uint32_t i = threadIdx.x; i < kXxh3SecretSize; i += kThreads) secret[i] = p.secret[i];
  __syncthreads();
  const Input in = p.inputs[blockIdx.x];
  if (in.bytes <= kXxh3ShortMax) {
    if (threadIdx.x == 0) p.digests[blockIdx.x] = xxh3_short(in.data, in.bytes, secret);
    return;
  }
  const uint64_t blocks = xxh3_full_blocks(in.bytes);
  const uint64_t rounds = (blocks + kRoundBlocks - 1) / kRoundBlocks;
  const uint32_t tid = threadIdx.x;
  const bool producer = tid < kProducers;
  const uint32_t lane = producer ? tid % kXxh3Lanes : tid - kProducers;  // chains: lanes 0..7
  uint64_t keys[kXxh3StripesPerBlock];
  uint64_t acc = 0, scramble_key = 0;
  if (producer) {
    xxh3_lane_keys(secret, lane, keys);
  } else if (lane < kXxh3Lanes) {
    acc = xxh3_initial(lane);
    scramble_key = xxh3_scramble_key(secret, lane);
  }
  for (uint64_t r = 0; r <= rounds; ++r) {
    if (producer && r < rounds) {
#pragma unroll
      for (uint32_t j = 0; j < kItemsPerProducer; ++j) {
        const uint32_t b = (tid + j * kProducers) / kXxh3Lanes;
        const uint64_t block = r * kRoundBlocks + b;
        if (block < blocks) {
          const auto* words = reinterpret_cast<const ulonglong2*>(in.data + block * kXxh3Block);
          const auto load = [&](size_t i) {
            const ulonglong2 w = __ldcs(words + i);
            return Xxh3Pair{w.x, w.y};
          };
          sums[r % 2][b][lane] = xxh3_block_sum(load, lane, keys);
        }
      }
    }
    if (!producer && lane < kXxh3Lanes && r > 0) {
      const uint64_t first = (r - 1) * kRoundBlocks;
      const uint32_t n = static_cast<uint32_t>(min(uint64_t{kRoundBlocks}, blocks - first));
      for (uint32_t b = 0; b < n; ++b)
        acc = xxh3_scramble(acc, sums[(r - 1) % 2][b][lane], scramble_key);
    }
    __syncthreads();
  }
  if (!producer && lane < kXxh3Lanes) acc_out[lane] = acc;
  __syncthreads();
  if (tid == kProducers) {
    uint64_t a[kXxh3Lanes];
    for (uint32_t l = 0; l < kXxh3Lanes; ++l) a[l] = acc_out[l];
    p.digests[blockIdx.x] = xxh3_long_finish(a, in.data, in.bytes, secret);
  }
}

}  // namespace
}  // namespace detail

Status xxh3_64_device(std::span<const DeviceBytes> inputs, void* d_scratch, size_t scratch_bytes,
                      CUstream_st* stream, std::span<uint64_t> digests) {
  using namespace detail;
  const size_t n = inputs.size();
  if (digests.size() != n) {
    return Status(ErrorCode::kInvalidArgument, "xxh3_64_device: " + std::to_string(digests.size()) +
                                                   " digests for " + std::to_string(n) + " inputs");
  }
  if (n == 0) return Status::ok();
  if (d_scratch == nullptr || scratch_bytes < xxh3_scratch_bytes(n) ||
      reinterpret_cast<uintptr_t>(d_scratch) % 16 != 0) {
    return Status(ErrorCode::kInvalidArgument, "xxh3_64_device: the scratch needs " +
                                                   std::to_string(xxh3_scratch_bytes(n)) +
                                                   " bytes, 16-byte aligned");
  }
  if (n > INT32_MAX) {
    return Status(ErrorCode::kResourceLimit, "xxh3_64_device: too many inputs in one launch");
  }
  std::vector<Input> table(n);
  for (size_t i = 0; i < n; ++i) {
    const auto* d = static_cast<const uint8_t*>(inputs[i].d_data);
    if (inputs[i].bytes > 0 && d == nullptr) {
      return Status(ErrorCode::kInvalidArgument,
                    "xxh3_64_device: input " + std::to_string(i) + " is null");
    }
    if (inputs[i].bytes > kXxh3ShortMax && reinterpret_cast<uintptr_t>(d) % 16 != 0) {
      return Status(ErrorCode::kInvalidArgument,
                    "xxh3_64_device: input " + std::to_string(i) + " is not 16-byte aligned");
    }
    table[i] = Input{d, inputs[i].bytes};
  }
  Params p{};
  const auto secret = xxh3_default_secret();
  std::copy(secret.begin(), secret.end(), p.secret);
  auto* d_table = static_cast<Input*>(d_scratch);
  p.inputs = d_table;
  p.digests = reinterpret_cast<uint64_t*>(d_table + n);
  DF11_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(d_table, table.data(), n * sizeof(Input), cudaMemcpyHostToDevice, stream),
      "xxh3_64_device: cudaMemcpyAsync");
  xxh3_kernel<<<static_cast<uint32_t>(n), kThreads, 0, stream>>>(p);
  DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "xxh3_64_device: kernel launch");
  DF11_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(digests.data(), p.digests, n * sizeof(uint64_t),
                                            cudaMemcpyDeviceToHost, stream),
                            "xxh3_64_device: cudaMemcpyAsync");
  DF11_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "xxh3_64_device: sync");
  return Status::ok();
}

}  // namespace df11::cuda
