// XXH3_64bits on the GPU (include/df11/cuda_hash.h), with the arithmetic of xxh3_core.h.
//
// One thread block per input. Its 256 producer threads (8 warps) copy the input's 1,024-byte
// blocks into a ring of shared-memory stages of 32 blocks with cp.async, kStages - 1 stages
// ahead (96 KB in flight per thread block without holding registers); in round r they sum the
// terms of stage r's blocks, one (block, accumulator) item each, while lanes 0..7 of the last
// warp run the eight scramble chains over round r - 1's sums. An input's time is bound by
// its chain (about 30 dependent instructions per block) once the copies keep up.
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
constexpr uint32_t kRoundBlocks = kProducers / kXxh3Lanes;  // 32: one item per producer
constexpr uint32_t kStages = 3;
// A block's slot: 1,024 bytes and 64 of padding, so that the four blocks a warp reads at once
// fall in two halves of the banks (two wavefronts, as many as 256 bytes need).
constexpr uint32_t kSlotBytes = kXxh3Block + 64;
constexpr uint32_t kStageBytes = kRoundBlocks * kSlotBytes;
constexpr uint32_t kChunksPerBlock = kXxh3Block / 16;
constexpr size_t kSharedBytes = size_t{kStages} * kStageBytes;

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

// 16 bytes global -> shared, asynchronous where the GPU has cp.async (sm_80 and later).
__device__ __forceinline__ void copy16(uint8_t* dst, const uint8_t* src) {
#if __CUDA_ARCH__ >= 800
  const auto d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
#else
  *reinterpret_cast<uint4*>(dst) = __ldcs(reinterpret_cast<const uint4*>(src));
#endif
}

__device__ __forceinline__ void copies_committed() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most `kPending` of this thread's committed copy groups are still in flight.
template <int kPending>
__device__ __forceinline__ void copies_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
#endif
}

// Producers: the copies of round r's blocks into stage r % kStages (past the input: none).
__device__ __forceinline__ void issue_stage(uint8_t* ring, const uint8_t* data, uint64_t blocks,
                                            uint64_t r, uint32_t tid) {
  uint8_t* stage = ring + (r % kStages) * kStageBytes;
  const uint64_t first = r * kRoundBlocks;
#pragma unroll
  for (uint32_t i = tid; i < kRoundBlocks * kChunksPerBlock; i += kProducers) {
    const uint32_t b = i / kChunksPerBlock, at = (i % kChunksPerBlock) * 16;
    if (first + b < blocks)
      copy16(stage + b * kSlotBytes + at, data + (first + b) * kXxh3Block + at);
  }
  copies_committed();
}

__global__ void __launch_bounds__(kThreads) xxh3_kernel(const __grid_constant__ Params p) {
  extern __shared__ __align__(16) uint8_t ring[];
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
  const uint32_t item_block = tid / kXxh3Lanes;
  uint64_t keys[kXxh3StripesPerBlock];
  uint64_t acc = 0, scramble_key = 0;
  if (producer) {
    xxh3_lane_keys(secret, lane, keys);
    for (uint64_t r = 0; r + 1 < kStages; ++r) issue_stage(ring, in.data, blocks, r, tid);
  } else if (lane < kXxh3Lanes) {
    acc = xxh3_initial(lane);
    scramble_key = xxh3_scramble_key(secret, lane);
  }
  for (uint64_t r = 0; r <= rounds; ++r) {
    if (producer) {
      // Stage r + kStages - 1 reuses the buffer round r - 1 read (the barrier that ended
      // round r - 1 came after those reads); then stage r is waited for.
      issue_stage(ring, in.data, blocks, r + kStages - 1, tid);
      copies_wait<kStages - 1>();
    }
    __syncthreads();
    if (producer && r < rounds && r * kRoundBlocks + item_block < blocks) {
      const uint8_t* block = ring + (r % kStages) * kStageBytes + item_block * kSlotBytes;
      const auto load = [&](size_t i) {
        const ulonglong2 w = reinterpret_cast<const ulonglong2*>(block)[i];
        return Xxh3Pair{w.x, w.y};
      };
      sums[r % 2][item_block][lane] = xxh3_block_sum(load, lane, keys);
    }
    if (!producer && lane < kXxh3Lanes && r > 0) {
      const uint64_t first = (r - 1) * kRoundBlocks;
      const uint32_t n = static_cast<uint32_t>(min(uint64_t{kRoundBlocks}, blocks - first));
      for (uint32_t b = 0; b < n; ++b) {
        acc = xxh3_scramble(acc, sums[(r - 1) % 2][b][lane], scramble_key);
      }
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
  DF11_CUDA_RETURN_IF_ERROR(
      cudaFuncSetAttribute(xxh3_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(kSharedBytes)),
      "xxh3_64_device: shared memory");
  xxh3_kernel<<<static_cast<uint32_t>(n), kThreads, kSharedBytes, stream>>>(p);
  DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "xxh3_64_device: kernel launch");
  DF11_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(digests.data(), p.digests, n * sizeof(uint64_t),
                                            cudaMemcpyDeviceToHost, stream),
                            "xxh3_64_device: cudaMemcpyAsync");
  DF11_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "xxh3_64_device: sync");
  return Status::ok();
}

}  // namespace df11::cuda
