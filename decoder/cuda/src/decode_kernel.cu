// The CUDA decode kernel and its launcher (design: decoder/cuda/NOTES.md):
// the decode pipeline (decode_pipeline.cuh) with a sink that joins each block's exponents
// and sign_mantissa bytes into BF16 and stores them, 8 weights per thread per step, a warp
// covering 256 consecutive weights (two 8-byte shared loads, one 16-byte global store).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "cuda_error.h"
#include "decode_pipeline.cuh"
#include "decode_plan.h"

namespace df11::cuda {
namespace detail {
namespace {

// Step 6 of the decode kernel: the block's weights to g.out.
struct StoreSink {
  // Step 6 reads every staging byte the scatter wrote and zeroes it (see staging_buffers).
  static constexpr uint32_t kExponentBuffers = 1;

  __device__ __forceinline__ bool needs_next_block(const BlockOut&) const { return false; }
  __device__ __forceinline__ void prepare(const BlockOut&) const {}
  __device__ __forceinline__ void after_block(const BlockOut&) const {}

  __device__ __forceinline__ void consume(const BlockOut& o) const {
    const KernelGroup& g = *o.g;
    const uint32_t t = threadIdx.x;
    // Output steps are 8-weight units from base8, which is 8-aligned (16 bytes of BF16).
    const uint32_t base8 = o.op0 & ~(kUnit - 1);
    const uint32_t unit_offset = base8 - o.base;  // 0 or 8
    const uint32_t lo_rel = o.op0 - base8;        // 0..7
    const uint32_t hi_rel = o.op1 - base8;
    const uint32_t n_units = o.op1 > o.op0 ? (hi_rel + kUnit - 1) / kUnit : 0;
    const uint32_t staging = o.staging;
    const uint32_t sm_stage_at = o.sm_stage_at;
    const bool sm_staged = o.sm_staged;
    uint16_t* const out = g.out + base8;
    const uint32_t ex_at = staging + unit_offset;
    const uint32_t sm_at = sm_stage_at + unit_offset;
    if (sm_staged && (g.flags & kOutputAligned16)) {
      // Whole units [full_begin, full_end) without per-unit checks; the block's two edge
      // units (weights before op0 or from op1 on) by threads 0 and 1.
      const uint32_t full_begin = lo_rel == 0 ? 0 : 1;
      const uint32_t full_end = max(hi_rel / kUnit, full_begin);
#pragma unroll 1
      for (uint32_t u = full_begin + t; u < full_end; u += kThreads) {
        const uint2 sm = lds_u64(sm_at + kUnit * u);
        const uint2 ex = lds_u64(ex_at + kUnit * u);
        sts_zero64(ex_at + kUnit * u);  // scatter_exponents ORs into zeros
        uint4 v;
        join4(sm.x, ex.x, v.x, v.y);
        join4(sm.y, ex.y, v.z, v.w);
        reinterpret_cast<uint4*>(out)[u] = v;
      }
      // Thread 0: unit 0 unless whole; thread 1: unit full_end if partial and not unit 0.
      const uint32_t edge = t == 0 ? 0u : full_end;
      if (t < 2 && edge < n_units && (edge < full_begin || edge >= full_end) &&
          (t == 0 || edge != 0)) {
        const uint2 ex = lds_u64(ex_at + kUnit * edge);
        sts_zero64(ex_at + kUnit * edge);
        write_unit(out, false, kUnit * edge, lo_rel, hi_rel, lds_u64(sm_at + kUnit * edge), ex);
      }
    } else {
      const bool vector = g.flags & kOutputAligned16;
      for (uint32_t u = t; u < n_units; u += kThreads) {
        const uint2 sm =
            sm_staged ? lds_u64(sm_at + kUnit * u) : load_sign_mantissa(g, base8 + kUnit * u);
        const uint2 ex = lds_u64(ex_at + kUnit * u);
        sts_zero64(ex_at + kUnit * u);
        write_unit(out, vector, kUnit * u, lo_rel, hi_rel, sm, ex);
      }
    }
  }
};

template <uint32_t kMaxGroups, bool kCompact>
__global__ void __launch_bounds__(kThreads, kCompact ? kMinBlocksPerSm : kMinBlocksPerSmFast)
    decode_kernel(const __grid_constant__ KernelBatch<kMaxGroups> batch) {
  StoreSink sink;
  decode_blocks<kMaxGroups, kCompact, StoreSink, /*kPool=*/true>(batch, sink);
}

template <uint32_t kMaxGroups, bool kCompact>
Status occupancy_of(uint32_t shared_bytes, int& blocks_per_sm) {
  const auto kernel = decode_kernel<kMaxGroups, kCompact>;
  DF11_RETURN_IF_ERROR(
      raise_shared_limit(reinterpret_cast<const void*>(kernel), shared_bytes, "decode kernel"));
  DF11_CUDA_RETURN_IF_ERROR(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kThreads, shared_bytes),
      "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  return Status::ok();
}

// Prepares every instantiation of one configuration; returns the thread blocks per
// multiprocessor (0 if it does not fit).
template <bool kCompact>
Status prepare_config(uint32_t shared_bytes, uint32_t& ctas_per_sm) {
  int a = 0, b = 0, c = 0;
  DF11_RETURN_IF_ERROR((occupancy_of<1, kCompact>(shared_bytes, a)));
  DF11_RETURN_IF_ERROR((occupancy_of<16, kCompact>(shared_bytes, b)));
  DF11_RETURN_IF_ERROR((occupancy_of<kMaxGroupsPerLaunch, kCompact>(shared_bytes, c)));
  ctas_per_sm = static_cast<uint32_t>(std::max(0, std::min({a, b, c})));
  return Status::ok();
}

// The tail pool of a launch of `blocks` blocks on `grid` thread blocks (decode_blocks):
// kPoolPercent of the blocks, rounded down to whole runs of kPoolChunk, if every static range
// keeps at least two blocks (each thread block then takes runs until the pool is empty);
// else none (pool_start = blocks). Pool shares from a quarter to over a half decode alike on
// the H100; runs of 3 or 4 blocks were slower than runs of 2 (decoder/cuda/NOTES.md).
constexpr uint64_t kPoolPercent = 40;
constexpr uint32_t kPoolChunk = 2;
uint64_t pool_start_for(uint64_t blocks, uint32_t grid) {
  const uint64_t pool = blocks * kPoolPercent / 100 / kPoolChunk * kPoolChunk;
  return pool != 0 && blocks - pool >= 2 * uint64_t{grid} ? blocks - pool : blocks;
}

template <uint32_t kMaxGroups, bool kCompact>
Status launch_one(const DecodePlan::Impl& p, uint32_t epoch, size_t first, size_t count,
                  GroupStatusRecord* status, unsigned long long* pool, cudaStream_t stream) {
  KernelBatch<kMaxGroups> batch{};
  batch.status = status + first;
  batch.n_groups = static_cast<uint32_t>(count);
  batch.layout = p.layout;
  batch.epoch = epoch;
  uint64_t blocks = 0;
  for (size_t i = 0; i < count; ++i) {
    batch.groups[i] = p.groups[first + i];
    blocks += p.groups[first + i].n_blocks;
  }
  batch.total_blocks = static_cast<uint32_t>(blocks);  // checked when planning
  const uint64_t resident = p.grid();
  const uint32_t grid = static_cast<uint32_t>(blocks < resident ? blocks : resident);
  if (grid == 0) return Status::ok();
  batch.pool_start = static_cast<uint32_t>(pool_start_for(blocks, grid));
  batch.pool = batch.pool_start < blocks ? pool : nullptr;
  batch.chunk = kPoolChunk;
  decode_kernel<kMaxGroups, kCompact><<<grid, kThreads, p.shared_bytes, stream>>>(batch);
  DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "decode kernel launch");
  return Status::ok();
}

// The workspace: the status records, then one pool counter per launch (workspace_bytes()).
template <bool kCompact>
Status launch_all(const DecodePlan::Impl& p, uint32_t epoch, GroupStatusRecord* status,
                  cudaStream_t stream) {
  auto* const pools = reinterpret_cast<unsigned long long*>(status + p.groups.size());
  for (size_t first = 0; first < p.groups.size(); first += kMaxGroupsPerLaunch) {
    const size_t count = std::min<size_t>(kMaxGroupsPerLaunch, p.groups.size() - first);
    unsigned long long* const pool = pools + first / kMaxGroupsPerLaunch;
    Status s = count == 1 ? launch_one<1, kCompact>(p, epoch, first, count, status, pool, stream)
               : count <= 16
                   ? launch_one<16, kCompact>(p, epoch, first, count, status, pool, stream)
                   : launch_one<kMaxGroupsPerLaunch, kCompact>(p, epoch, first, count, status, pool,
                                                               stream);
    DF11_RETURN_IF_ERROR(s);
  }
  return Status::ok();
}

}  // namespace

Status configure_kernel(const SharedLayout& layout, KernelChoice choice, KernelConfig& config) {
  int device = 0, optin = 0;
  DF11_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "cudaGetDevice");
  DF11_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
      "cudaDeviceGetAttribute(shared memory per block)");
  cudaFuncAttributes attr{};
  DF11_CUDA_RETURN_IF_ERROR(cudaFuncGetAttributes(&attr, decode_kernel<kMaxGroupsPerLaunch, false>),
                            "cudaFuncGetAttributes(decode kernel)");
  const uint64_t fast =
      dynamic_shared_bytes(layout, staging_buffers<false, StoreSink::kExponentBuffers>());
  const uint64_t compact =
      dynamic_shared_bytes(layout, staging_buffers<true, StoreSink::kExponentBuffers>());
  uint32_t fast_ctas = 0, compact_ctas = 0;
  if (choice != KernelChoice::kCompact &&
      attr.sharedSizeBytes + fast <= static_cast<uint64_t>(optin)) {
    DF11_RETURN_IF_ERROR(prepare_config<false>(static_cast<uint32_t>(fast), fast_ctas));
  }
  if (choice != KernelChoice::kFast &&
      attr.sharedSizeBytes + compact <= static_cast<uint64_t>(optin)) {
    DF11_RETURN_IF_ERROR(prepare_config<true>(static_cast<uint32_t>(compact), compact_ctas));
  }
  // The fast configuration unless the compact one fits more thread blocks.
  config.compact = compact_ctas > fast_ctas;
  config.ctas_per_sm = config.compact ? compact_ctas : fast_ctas;
  config.shared_bytes = static_cast<uint32_t>(config.compact ? compact : fast);
  if (config.ctas_per_sm == 0) {
    return Status(ErrorCode::kResourceLimit,
                  std::string("the decode kernel") +
                      (choice == KernelChoice::kFast      ? " (fast configuration)"
                       : choice == KernelChoice::kCompact ? " (compact configuration)"
                                                          : "") +
                      " does not fit this GPU's shared memory for staging buffers of " +
                      std::to_string(layout.staging_bytes) + " bytes (" + std::to_string(optin) +
                      " bytes per thread block)");
  }
  return Status::ok();
}

constexpr uint32_t kCopiesPerLaunch = 64;

struct CopyBatch {
  const uint32_t* src[kCopiesPerLaunch];
  uint32_t* dst[kCopiesPerLaunch];
  uint32_t words[kCopiesPerLaunch];
};

// Thread block k copies entry k.
__global__ void __launch_bounds__(128) copy_words_batch_kernel(const CopyBatch batch) {
  const uint32_t k = blockIdx.x;
  const uint32_t* const src = batch.src[k];
  uint32_t* const dst = batch.dst[k];
  for (uint32_t i = threadIdx.x; i < batch.words[k]; i += blockDim.x) dst[i] = src[i];
}

namespace {

// The device address of host byte `h` (page-locked, under unified addressing), or null.
uint8_t* device_address(const uint8_t* h) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, h) != cudaSuccess) {
    (void)cudaGetLastError();  // a pointer CUDA does not know
    return nullptr;
  }
  return a.type == cudaMemoryTypeHost ? static_cast<uint8_t*>(a.devicePointer) : nullptr;
}

}  // namespace

Status enqueue_status_copies(std::span<const StatusCopy> copies, const uint8_t* h_begin,
                             const uint8_t* h_end, int device, CUstream_st* stream,
                             const char* what) {
  if (copies.empty()) return Status::ok();
  uint8_t* d_begin = nullptr;
  int current = -1;
  if (h_end > h_begin && cudaGetDevice(&current) == cudaSuccess && current == device) {
    d_begin = device_address(h_begin);
    // Both ends mapped at one offset: one allocation, as the caller promises (one page: the
    // same mapping).
    const uint8_t* last = h_end - 1;
    const bool one_page =
        reinterpret_cast<uintptr_t>(h_begin) / 4096 == reinterpret_cast<uintptr_t>(last) / 4096;
    if (d_begin != nullptr && !one_page && device_address(last) != d_begin + (last - h_begin)) {
      d_begin = nullptr;
    }
  }
  bool words = d_begin != nullptr && reinterpret_cast<uintptr_t>(d_begin) % 4 == 0 &&
               reinterpret_cast<uintptr_t>(h_begin) % 4 == 0;
  for (const StatusCopy& c : copies) {
    words = words && c.dst >= h_begin && c.dst + c.bytes <= h_end && c.bytes % 4 == 0 &&
            c.bytes / 4 <= 0xFFFFFFFFu && reinterpret_cast<uintptr_t>(c.src) % 4 == 0 &&
            reinterpret_cast<uintptr_t>(c.dst) % 4 == 0;
  }
  if (!words) {
    for (const StatusCopy& c : copies) {
      DF11_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(c.dst, c.src, c.bytes, cudaMemcpyDeviceToHost, stream), what);
    }
    return Status::ok();
  }
  for (size_t first = 0; first < copies.size(); first += kCopiesPerLaunch) {
    const size_t count = std::min<size_t>(kCopiesPerLaunch, copies.size() - first);
    CopyBatch batch{};
    for (size_t k = 0; k < count; ++k) {
      const StatusCopy& c = copies[first + k];
      batch.src[k] = static_cast<const uint32_t*>(c.src);
      batch.dst[k] = reinterpret_cast<uint32_t*>(d_begin + (c.dst - h_begin));
      batch.words[k] = static_cast<uint32_t>(c.bytes / 4);
    }
    copy_words_batch_kernel<<<static_cast<uint32_t>(count), 128, 0, stream>>>(batch);
    DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), what);
  }
  return Status::ok();
}

Status enqueue_status_copy(const void* d_src, void* h_dst, size_t bytes, int plan_device,
                           CUstream_st* stream, const char* what) {
  if (bytes == 0) return Status::ok();
  auto* const h = static_cast<uint8_t*>(h_dst);
  const StatusCopy copy{d_src, h, bytes};
  return enqueue_status_copies({&copy, 1}, h, h + bytes, plan_device, stream, what);
}

}  // namespace detail

Status launch_decode(DecodePlan& plan, void* d_workspace, size_t workspace_bytes,
                     CUstream_st* stream) {
  DecodePlan::Impl& p = *plan.impl_;
  if (workspace_bytes < plan.workspace_bytes() || (d_workspace == nullptr && !p.groups.empty())) {
    return Status(ErrorCode::kInvalidArgument,
                  "launch_decode: workspace of " + std::to_string(workspace_bytes) +
                      " bytes, the plan needs " + std::to_string(plan.workspace_bytes()));
  }
  int device = -1;
  DF11_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "launch_decode: cudaGetDevice");
  if (device != p.device) {
    return Status(ErrorCode::kInvalidArgument,
                  "launch_decode: the plan was made for device " + std::to_string(p.device) +
                      ", the current device is " + std::to_string(device));
  }
  if (p.rows_only) {
    return Status(ErrorCode::kInvalidArgument,
                  "launch_decode: a group of the plan has no output (d_out null); such a plan "
                  "serves launch_decode_rows only");
  }
  if (p.groups.empty()) return Status::ok();
  DF11_ASSIGN_OR_RETURN(const uint32_t epoch,
                        detail::begin_launch(p, d_workspace, stream, "launch_decode"));
  auto* status = static_cast<detail::GroupStatusRecord*>(d_workspace);
  return p.compact ? detail::launch_all<true>(p, epoch, status, stream)
                   : detail::launch_all<false>(p, epoch, status, stream);
}

}  // namespace df11::cuda
