// The CUDA decode kernel and its launcher (design and measurements: decoder/cuda/NOTES.md).
//
// One thread block of 512 threads decodes one 4096-byte stream block per iteration, thread t
// taking window t, and loops over a contiguous range of blocks (persistent grid: a few thread
// blocks per multiprocessor; the lookup tables are staged once per group, not per block).
// Per iteration:
//   1. the window's 12 bytes, two gap fields and three output positions were loaded during
//      the previous iteration; the block's sign_mantissa bytes are requested now;
//   2. one decode pass: exponents go to 16 registers (unrolled loop, constant indices);
//   3. next block's inputs are requested; block-wide exclusive scan of the counts (warp
//      shuffles + one shared array of 16 warp totals, one barrier);
//   4. checks (gap chain, counts, stream end) -> status record on failure;
//   5. exponents are written, compacted, into a shared staging buffer (32-bit stores);
//   6. barrier; 16 weights per thread per step: 16 exponents (one 16-byte shared load) join
//      16 sign_mantissa bytes (one 16-byte global load) into two 16-byte global stores.
// Staging buffers and warp totals are double-buffered, so two barriers per block suffice.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "cuda_error.h"
#include "decode_core.h"
#include "decode_plan.h"

namespace df11::cuda {
namespace detail {
namespace {

constexpr uint32_t kThreads = kWindowsPerBlock;  // one thread per window (spec 3.1)
constexpr uint32_t kWarps = kThreads / 32;
constexpr uint32_t kChunk = 16;  // weights per thread per output step (16 B in, 32 B out)
// Registers allow two thread blocks of 512 threads per multiprocessor (64 registers each).
constexpr uint32_t kMinBlocksPerSm = 2;

template <uint32_t kMaxGroups>
struct KernelBatch {
  GroupStatusRecord* status;  // one per group of this launch
  uint32_t n_groups;
  uint32_t total_blocks;
  uint32_t staging_bytes;
  uint32_t epoch;
  KernelGroup groups[kMaxGroups];
};

struct SharedTable {
  const uint16_t* t;
  __device__ __forceinline__ uint32_t operator()(uint32_t i) const { return t[i]; }
};

__device__ __forceinline__ uint32_t warp_inclusive_scan(uint32_t v, uint32_t lane) {
#pragma unroll
  for (uint32_t d = 1; d < 32; d <<= 1) {
    const uint32_t u = __shfl_up_sync(0xFFFFFFFFu, v, d);
    if (lane >= d) v += u;
  }
  return v;
}

// 16 sign_mantissa bytes of weights [gstart, gstart + 16); bytes past n_elements read as 0.
__device__ __forceinline__ uint4 load_sign_mantissa(const KernelGroup& g, uint64_t gstart) {
  if ((g.flags & kVectorOutput) && gstart + kChunk <= g.n_elements) {
    return __ldg(reinterpret_cast<const uint4*>(g.sign_mantissa + gstart));
  }
  uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
  for (uint32_t k = 0; k < kChunk; ++k) {
    const uint32_t v = gstart + k < g.n_elements ? __ldg(g.sign_mantissa + gstart + k) : 0u;
    w[k / 4] |= v << (8 * (k % 4));
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Writes the weights of [gstart, gstart + 16) that lie in the block's range [lo, hi).
__device__ __forceinline__ void write_chunk(const KernelGroup& g, uint64_t gstart, uint32_t lo,
                                            uint32_t hi, const uint4& sm, const uint4& ex) {
  if ((g.flags & kVectorOutput) && gstart >= lo && gstart + kChunk <= hi) {
    uint4 a, b;
    join4(sm.x, ex.x, a.x, a.y);
    join4(sm.y, ex.y, a.z, a.w);
    join4(sm.z, ex.z, b.x, b.y);
    join4(sm.w, ex.w, b.z, b.w);
    uint4* dst = reinterpret_cast<uint4*>(g.out + gstart);
    dst[0] = a;
    dst[1] = b;
    return;
  }
  const uint32_t s[4] = {sm.x, sm.y, sm.z, sm.w};
  const uint32_t e[4] = {ex.x, ex.y, ex.z, ex.w};
#pragma unroll
  for (uint32_t k = 0; k < kChunk; ++k) {
    const uint64_t i = gstart + k;
    if (i >= lo && i < hi) {
      g.out[i] = join1((s[k / 4] >> (8 * (k % 4))) & 0xFF, (e[k / 4] >> (8 * (k % 4))) & 0xFF);
    }
  }
}

// Rare path (a corrupt stream): keeps the problem a sequential decoder would meet first.
__device__ __noinline__ void report(GroupStatusRecord* rec, uint32_t epoch, uint32_t block,
                                    uint32_t problem, uint32_t detail) {
  const unsigned long long key = record_key(epoch, block, problem);
  if (key > atomicMax(&rec->key, key)) atomicExch(&rec->detail, detail);
}

template <uint32_t kMaxGroups>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    decode_kernel(const __grid_constant__ KernelBatch<kMaxGroups> batch) {
  __shared__ uint16_t table[kTableEntries];
  __shared__ uint32_t warp_totals[2][kWarps];
  extern __shared__ uint4 staging_raw[];

  const uint32_t t = threadIdx.x;
  const uint32_t lane = t % 32;
  const uint32_t warp = t / 32;
  const uint32_t begin =
      static_cast<uint32_t>(uint64_t{blockIdx.x} * batch.total_blocks / gridDim.x);
  const uint32_t end =
      static_cast<uint32_t>(uint64_t{blockIdx.x + 1} * batch.total_blocks / gridDim.x);
  if (begin >= end) return;

  // Group of block `begin`: the last one starting at or before it (every group has blocks).
  uint32_t gi = 0;
  {
    uint32_t lo = 0, hi = batch.n_groups;
    while (hi - lo > 1) {
      const uint32_t mid = (lo + hi) / 2;
      if (batch.groups[mid].first_block <= begin) lo = mid; else hi = mid;
    }
    gi = lo;
  }
  uint32_t staged = 0xFFFFFFFFu;
  WindowInputs in = load_window_inputs(batch.groups[gi], begin - batch.groups[gi].first_block, t);
  uint32_t parity = 0;

  for (uint32_t b = begin; b < end; ++b) {
    const KernelGroup& g = batch.groups[gi];
    if (gi != staged) {
      // No barrier needed before: every thread passed this iteration's predecessor's second
      // barrier, after the last use of the table.
      for (uint32_t i = t; i < kTableEntries; i += kThreads) {
        table[i] = static_cast<uint16_t>(table_entry(g.luts, g.n_luts, g.row_depths, i));
      }
      __syncthreads();
      staged = gi;
    }
    const uint32_t lb = b - g.first_block;

    // Block facts, clamped so that no output position can move a write out of the block's
    // range, the group or the staging buffer.
    uint32_t op1 = min(in.op1, g.n_elements);
    const uint32_t op0 = min(in.op0, op1);
    uint32_t expected = op1 - op0;
    uint32_t block_problem = kProblemNone;
    uint32_t block_detail = 0;
    const uint32_t max_weights = batch.staging_bytes - 15;
    if (expected > max_weights) {
      block_problem = kProblemTooMany;
      block_detail = expected;
      expected = max_weights;
      op1 = op0 + expected;
    }
    const uint32_t op2 = min(max(in.op2, op1), g.n_elements);
    const uint64_t base = op0 & ~(kChunk - 1);
    const uint32_t n_chunks = expected ? static_cast<uint32_t>((op1 - base + kChunk - 1) / kChunk) : 0;

    // 1. sign_mantissa for this thread's first two output steps, used after the decode.
    uint4 sm0 = make_uint4(0, 0, 0, 0), sm1 = make_uint4(0, 0, 0, 0);
    if (t < n_chunks) sm0 = load_sign_mantissa(g, base + uint64_t{t} * kChunk);
    if (t + kThreads < n_chunks) sm1 = load_sign_mantissa(g, base + uint64_t{t + kThreads} * kChunk);

    // 2. decode the window.
    const SharedTable tab{table};
    uint32_t exps[kExponentWords];
    const WindowResult r = decode_window(tab, in.w0, in.w1, in.w2, in.gap, exps);

    // 3. next block's inputs, then the block-wide scan.
    WindowInputs next = in;
    uint32_t gi_next = gi;
    if (b + 1 < end) {
      while (gi_next + 1 < batch.n_groups &&
             b + 1 >= batch.groups[gi_next].first_block + batch.groups[gi_next].n_blocks) {
        ++gi_next;
      }
      const KernelGroup& gn = batch.groups[gi_next];
      next = load_window_inputs(gn, b + 1 - gn.first_block, t);
    }
    const uint32_t incl = warp_inclusive_scan(r.count, lane);
    if (lane == 31) warp_totals[parity][warp] = incl;
    __syncthreads();
    const uint32_t wt = lane < kWarps ? warp_totals[parity][lane] : 0;
    const uint32_t wincl = warp_inclusive_scan(wt, lane);
    const uint32_t total = __shfl_sync(0xFFFFFFFFu, wincl, kWarps - 1);
    const uint32_t prefix = __shfl_sync(0xFFFFFFFFu, wincl - wt, warp) + incl - r.count;

    // 4. checks.
    const BlockFacts facts{lb, g.n_blocks, expected, op2 - op1, total};
    uint32_t end_check = 0;
    uint32_t problem = window_problem(facts, t, prefix, r, in.gap, in.gap_next, end_check);
    uint32_t detail = problem == kProblemFirstGap ? in.gap : t;
    if (end_check != 0) {
      const uint32_t e = window_end_after(tab, in.w0, in.w1, in.w2, in.gap, end_check);
      problem = first_problem(
          problem, stream_end_problem(e, uint64_t{lb} * kWindowsPerBlock + t, g.n_bytes));
    }
    if (t == 0 && !count_ok(facts) && first_problem(problem, kProblemCount) == kProblemCount) {
      problem = kProblemCount;
      detail = total;
    }
    if (t == 0 && block_problem != kProblemNone &&
        first_problem(problem, block_problem) == block_problem) {
      problem = block_problem;
      detail = block_detail;
    }
    if (problem != kProblemNone) report(batch.status + gi, batch.epoch, lb, problem, detail);

    // 5. compacted exponents into this iteration's staging buffer (real codes only).
    uint8_t* staging = reinterpret_cast<uint8_t*>(staging_raw) + parity * batch.staging_bytes;
    const uint32_t keep = prefix < expected ? min(r.count, expected - prefix) : 0;
    scatter_exponents(
        exps, prefix + (op0 & (kChunk - 1)), keep,
        [&](uint32_t word, uint32_t v) { reinterpret_cast<uint32_t*>(staging)[word] = v; },
        [&](uint32_t byte, uint32_t v) { staging[byte] = static_cast<uint8_t>(v); });
    __syncthreads();

    // 6. join and store, 16 weights per thread per step.
    if (t < n_chunks) {
      write_chunk(g, base + uint64_t{t} * kChunk, op0, op1, sm0,
                  reinterpret_cast<const uint4*>(staging)[t]);
    }
    if (t + kThreads < n_chunks) {
      write_chunk(g, base + uint64_t{t + kThreads} * kChunk, op0, op1, sm1,
                  reinterpret_cast<const uint4*>(staging)[t + kThreads]);
    }
    for (uint32_t c = t + 2 * kThreads; c < n_chunks; c += kThreads) {
      const uint64_t gstart = base + uint64_t{c} * kChunk;
      write_chunk(g, gstart, op0, op1, load_sign_mantissa(g, gstart),
                  reinterpret_cast<const uint4*>(staging)[c]);
    }

    in = next;
    gi = gi_next;
    parity ^= 1;
  }
}

template <uint32_t kMaxGroups>
Status prepare_one(uint32_t shared_bytes, uint32_t& ctas_per_sm) {
  DF11_CUDA_RETURN_IF_ERROR(
      cudaFuncSetAttribute(decode_kernel<kMaxGroups>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(shared_bytes)),
      "cudaFuncSetAttribute(decode kernel, " + std::to_string(shared_bytes) +
          " bytes of dynamic shared memory)");
  int n = 0;
  DF11_CUDA_RETURN_IF_ERROR(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, decode_kernel<kMaxGroups>, kThreads,
                                                    shared_bytes),
      "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  if (n <= 0) {
    return Status(ErrorCode::kResourceLimit,
                  "the decode kernel does not fit on a multiprocessor with " +
                      std::to_string(shared_bytes) + " bytes of dynamic shared memory");
  }
  ctas_per_sm = ctas_per_sm == 0 ? static_cast<uint32_t>(n) : min(ctas_per_sm, uint32_t(n));
  return Status::ok();
}

template <uint32_t kMaxGroups>
Status launch_one(const DecodePlan::Impl& p, size_t first, size_t count,
                  GroupStatusRecord* status, cudaStream_t stream) {
  KernelBatch<kMaxGroups> batch{};
  batch.status = status + first;
  batch.n_groups = static_cast<uint32_t>(count);
  batch.staging_bytes = p.staging_bytes;
  batch.epoch = p.epoch;
  uint64_t blocks = 0;
  for (size_t i = 0; i < count; ++i) {
    batch.groups[i] = p.groups[first + i];
    blocks += p.groups[first + i].n_blocks;
  }
  batch.total_blocks = static_cast<uint32_t>(blocks);  // checked when planning
  const uint64_t resident = uint64_t{p.ctas_per_sm} * p.sm_count;
  const uint32_t grid = static_cast<uint32_t>(blocks < resident ? blocks : resident);
  if (grid == 0) return Status::ok();
  decode_kernel<kMaxGroups><<<grid, kThreads, p.shared_bytes, stream>>>(batch);
  DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "decode kernel launch");
  return Status::ok();
}

}  // namespace

Status prepare_kernels(uint32_t shared_bytes, uint32_t& ctas_per_sm) {
  ctas_per_sm = 0;
  DF11_RETURN_IF_ERROR(prepare_one<1>(shared_bytes, ctas_per_sm));
  DF11_RETURN_IF_ERROR(prepare_one<16>(shared_bytes, ctas_per_sm));
  DF11_RETURN_IF_ERROR(prepare_one<kMaxGroupsPerLaunch>(shared_bytes, ctas_per_sm));
  return Status::ok();
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
  p.epoch = p.epoch == UINT32_MAX ? 1 : p.epoch + 1;  // 0 marks a record never written
  auto* status = static_cast<detail::GroupStatusRecord*>(d_workspace);
  for (size_t first = 0; first < p.groups.size(); first += detail::kMaxGroupsPerLaunch) {
    const size_t count = std::min<size_t>(detail::kMaxGroupsPerLaunch, p.groups.size() - first);
    Status s = count == 1    ? detail::launch_one<1>(p, first, count, status, stream)
               : count <= 16 ? detail::launch_one<16>(p, first, count, status, stream)
                             : detail::launch_one<detail::kMaxGroupsPerLaunch>(p, first, count,
                                                                               status, stream);
    DF11_RETURN_IF_ERROR(s);
  }
  return Status::ok();
}

}  // namespace df11::cuda
