// Fused GEMM from the compact execution layout (cuda_compact.h): Y = X W^T with W decoded in
// registers, never written out. The layout keeps the 12-bit layout's geometry, so a lane's 16
// slots of a step are its A fragments of two m16n8k16 products, and the kernel is the 12-bit
// GEMM (exec_gemm.cu) with the exponents taken from the lane's codewords instead of its code
// plane: one thread block of 8 warps per strip, warp w takes the strip's tiles w, w + 8, ...,
// and the warp sums meet in shared memory in warp order. That is the order of
// launch_bf16_reference_gemm (cuda_exec.h), so the output equals it bit for bit.
//
// Per tile the warp has its stream words in shared memory, copied (cp.async) while it decoded
// its previous tile (compact_core.h: compact_walk_tiles_words, and compact_walk_tiles, which
// copies the next tile's head too), finds each lane's first bit with a shuffle scan of the lane
// table, and per step decodes the lane's 16 codewords through the decode table (shared memory,
// two codewords a lookup) while the byte plane and X of the next steps are in flight.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "compact_core.h"
#include "compact_launch.h"
#include "cuda_error.h"
#include "df11/cuda_compact.h"
#include "df11/cuda_exec.h"
#include "exec_fragments.cuh"

namespace df11::cuda {
namespace {

constexpr uint32_t kWarps = 8;  // the reference GEMM's warps per strip: its order of sums
constexpr uint32_t kTableEntries = 1u << kCompactMaxCodeBits;

// Steps whose byte plane and X are loaded together, and blocks per multiprocessor, per n8
// tiles (batch 1-8: 1, 9-16: 2, 17-32: 4). The macros are for A/B builds (EXEC_KERNEL.md).
#ifndef DF11_COMPACT_STEPS_B1
#define DF11_COMPACT_STEPS_B1 2
#endif
#ifndef DF11_COMPACT_BLOCKS_B1
#define DF11_COMPACT_BLOCKS_B1 4
#endif
#ifndef DF11_COMPACT_BLOCKS_B2
#define DF11_COMPACT_BLOCKS_B2 3
#endif
// The kernel with helpers at batch 9-16 takes one step at a time: two blocks of 16 warps per
// multiprocessor leave it 64 registers, under which two steps in flight spill more.
#ifndef DF11_COMPACT_HELPER_STEPS_B2
#define DF11_COMPACT_HELPER_STEPS_B2 1
#endif
template <uint32_t NB, bool kHelpers = false>
constexpr uint32_t kStepsInFlight = NB == 1               ? DF11_COMPACT_STEPS_B1
                                    : NB == 2 && kHelpers ? DF11_COMPACT_HELPER_STEPS_B2
                                                          : 2;
template <uint32_t NB>
constexpr uint32_t kMinBlocks = NB == 1   ? DF11_COMPACT_BLOCKS_B1
                                : NB == 2 ? DF11_COMPACT_BLOCKS_B2
                                          : 2;

// How each warp stages its tiles' stream words (compact_core.h): 0, synchronously at each
// tile's start; 1, the next tile's copied (cp.async) while this one is decoded; 2, also the
// head of the tile after it (first bits, lane table). Chosen per n8 tiles by measurement
// (EXEC_KERNEL.md); -1 (the default) takes that choice, another value forces one for A/B builds.
#ifndef DF11_COMPACT_PREFETCH
#define DF11_COMPACT_PREFETCH -1
#endif
template <uint32_t NB>
constexpr int kPrefetch = DF11_COMPACT_PREFETCH >= 0 ? DF11_COMPACT_PREFETCH
                          : NB == 4                  ? 2
                                                     : 1;

// Whether a lane keeps the word after its window in a register (compact_step_exponents): at
// batch 1-8 faster (0.95x cuBLAS's time one call against 0.98x on an H100), at 9-32 no faster
// where registers are short (EXEC_KERNEL.md). 0 builds without it, for A/B builds.
#ifndef DF11_COMPACT_AHEAD
#define DF11_COMPACT_AHEAD 1
#endif
template <uint32_t NB>
constexpr bool kAhead = DF11_COMPACT_AHEAD != 0 && NB == 1;

// A launch of few strips (o_proj's and down_proj's 256, against the 4 x 132 blocks an H100
// holds) leaves most of the GPU idle, and each strip's 8 warps walk its tiles one after
// another. At batch 1-16 (DF11_COMPACT_HELPER_MAX_BATCH) such a launch takes a build with 8
// helper warps per block: helper w
// decodes the tiles w + 8, w + 24, ... of the 16 that owner warp w would take after its own
// tiles w, w + 16, ..., and hands it their exponents through shared memory; owner w decodes
// its own tiles and multiplies all of its 8 warps' share in the reference's order. The
// products and sums are the same, in the same order: only who decodes a tile changes. Used
// where a launch's strips are at most DF11_COMPACT_HELPER_BLOCKS per multiprocessor and a
// multiprocessor holds two blocks of 16 warps (sm_90's 227 KB of shared memory; sm_80's 164 KB
// holds one, and sm_86's and sm_89's blocks have 99 KB at most), 0 builds without it.
#ifndef DF11_COMPACT_HELPER_BLOCKS
#define DF11_COMPACT_HELPER_BLOCKS 2
#endif
#ifndef DF11_COMPACT_HELPER_MAX_BATCH
#define DF11_COMPACT_HELPER_MAX_BATCH 16
#endif
static_assert(DF11_COMPACT_HELPER_MAX_BATCH == 8 || DF11_COMPACT_HELPER_MAX_BATCH == 16);
constexpr uint32_t kHelperBlocksPerSm = 2;
// A block with helpers: its shared memory (dynamic: over 48 KB), the decode table, 16 warps'
// staged words, and a tile's exponents per owner (a uint4 per lane and step).
constexpr size_t kHelperTableBytes = sizeof(uint32_t) * kTableEntries;
constexpr size_t kHelperStageBytes = sizeof(uint32_t) * 2 * kWarps * detail::kCompactStageSpan;
constexpr size_t kHelperHandBytes = sizeof(uint4) * kWarps * kExecTileSteps * 32;
constexpr size_t kHelperSharedBytes = kHelperTableBytes + kHelperStageBytes + kHelperHandBytes;

// Owner warp w and its helper, warp w + 8, meet at named barrier 1 + w (0 is __syncthreads').
__device__ __forceinline__ void pair_sync(uint32_t w) {
  asm volatile("bar.sync %0, 64;" ::"r"(1 + w) : "memory");
}

// Matrices per launch (more: several launches).
constexpr uint32_t kMaxMatrices = 16;

struct MatrixParams {
  detail::CompactView v;
  const uint16_t* x;  // [batch, cols]
  uint16_t* y;        // [batch, rows]
  bool x_vec;
};

struct GemmParams {
  uint32_t* status;
  uint32_t batch, n;
  uint32_t begin[kMaxMatrices + 1];  // first block (strip) of matrix i
  MatrixParams m[kMaxMatrices];
};

template <uint32_t NB, bool kHelpers>
__global__ void __launch_bounds__((kHelpers ? 2 : 1) * kWarps * 32,
                                  kHelpers ? kHelperBlocksPerSm : kMinBlocks<NB>)
    compact_gemm_kernel(const __grid_constant__ GemmParams p) {
  constexpr uint32_t kAllWarps = (kHelpers ? 2 : 1) * kWarps;
  uint32_t* table;
  uint32_t(*stage)[detail::kCompactStageSpan];
  uint4(*hand)[kExecTileSteps][32] = nullptr;  // owner w's helper tile, its exponents
  if constexpr (kHelpers) {
    extern __shared__ uint4 dynamic_shared[];
    auto* base = reinterpret_cast<unsigned char*>(dynamic_shared);
    table = reinterpret_cast<uint32_t*>(base);
    stage = reinterpret_cast<uint32_t(*)[detail::kCompactStageSpan]>(base + kHelperTableBytes);
    hand = reinterpret_cast<uint4(*)[kExecTileSteps][32]>(base + kHelperTableBytes +
                                                          kHelperStageBytes);
    static_assert(kHelperStageBytes >= sizeof(float) * kAllWarps * 32 * NB * 4);
  } else {
    __shared__ uint32_t static_table[kTableEntries];
    __shared__ uint32_t static_stage[kWarps][detail::kCompactStageSpan];
    static_assert(sizeof static_stage >= sizeof(float) * kWarps * 32 * NB * 4);
    table = static_table;
    stage = static_stage;
  }
  const uint32_t mi = detail::exec_find_item(p.begin, p.n, blockIdx.x);
  const MatrixParams& mp = p.m[mi];
  for (uint32_t i = threadIdx.x; i < kTableEntries; i += blockDim.x) {
    table[i] = __ldg(mp.v.table + i);
  }
  __syncthreads();
  detail::CompactView v = mp.v;
  v.table = table;
  const uint64_t strip = blockIdx.x - p.begin[mi];
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t g = lane / 4, t = lane % 4;
  const uint32_t cols = v.cols;
  const uint16_t* xrow[NB];
#pragma unroll
  for (uint32_t n = 0; n < NB; ++n) {
    // Rows of X past the batch compute into columns of Y nobody reads: any row will do.
    xrow[n] = mp.x + uint64_t{min(8 * n + g, p.batch - 1)} * cols;
  }
  float acc[NB][4];
#pragma unroll
  for (uint32_t n = 0; n < NB; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
  const uint32_t full_steps = cols / kExecStepCols;
  const auto* lane_bytes =
      reinterpret_cast<const uint4*>(v.blob + v.byte_plane) + strip * v.steps * kExecLanes + lane;
  const uint32_t tiles_per_strip = static_cast<uint32_t>(v.tiles_per_strip);
  const uint32_t steps = static_cast<uint32_t>(v.steps);
  bool ok = true;
  // The products of tile u of the strip, its exponents decoded from the lane's run r, read
  // through words from bit pos0 on, or (kHand) its helper's, from shared memory.
  const auto tile_body = [&](uint32_t u, auto hand_tag, const detail::CompactRun& r,
                             const auto& words, uint32_t pos0) {
    constexpr bool kHand = decltype(hand_tag)::value;
    const uint32_t q0 = u * kExecTileSteps;
    const uint32_t q1 = min(q0 + kExecTileSteps, steps);
    detail::CompactLane l{};
    if constexpr (!kHand) l = detail::compact_lane_at(words, pos0);
    constexpr uint32_t kSteps = kStepsInFlight<NB, kHelpers>;
    for (uint32_t q = q0; q < q1; q += kSteps) {
      uint4 bytes[kSteps];
      uint4 xv[kSteps][NB];
#pragma unroll
      for (uint32_t i = 0; i < kSteps; ++i) {
        if (q + i >= q1) break;
        const uint32_t c = (q + i) * kExecStepCols + 8 * t;
        bytes[i] = __ldg(lane_bytes + uint64_t{q + i} * kExecLanes);
#pragma unroll
        for (uint32_t k = 0; k < NB; ++k) {
          xv[i][k] = mp.x_vec && q + i < full_steps
                         ? __ldg(reinterpret_cast<const uint4*>(xrow[k] + c))
                         : detail::exec_load_x(xrow[k], c, cols, mp.x_vec);
        }
      }
#pragma unroll
      for (uint32_t i = 0; i < kSteps; ++i) {
        if (q + i >= q1) break;
        uint32_t e[kExecSlots / 4];
        if constexpr (kHand) {
          const uint4 h = hand[warp][q + i - q0][lane];
          e[0] = h.x;
          e[1] = h.y;
          e[2] = h.z;
          e[3] = h.w;
        } else {
          detail::compact_step_exponents<kAhead<NB>>(table, words, l, e);
        }
        detail::LaneWeights lw = detail::exec_build(bytes[i], e);
        if (q + i >= full_steps) {  // the ragged last step
          detail::mask_columns(lw, (q + i) * kExecStepCols + 8 * t, cols);
        }
        detail::step_products<NB>(lw, xv[i], acc);
      }
    }
    if constexpr (!kHand) ok &= detail::compact_lane_ok(r, l, pos0);
  };
  const uint64_t t0 = strip * tiles_per_strip;
  if constexpr (kHelpers) {
    const uint32_t w = warp % kWarps;
    if (warp >= kWarps) {
      // A helper: tiles w + 8, w + 24, ... decoded into hand[w], one at a time, each handed
      // over at the pair's barrier and kept until the owner has read it (a second one).
      detail::compact_walk_tiles_words(
          v, t0 + kWarps + w, t0 + tiles_per_strip, 2 * kWarps, lane, stage[warp],
          [&](uint64_t tile, const detail::CompactRun& r, const auto& words, uint32_t pos0) {
            const uint32_t q0 = static_cast<uint32_t>(tile - t0) * kExecTileSteps;
            const uint32_t n = min(q0 + kExecTileSteps, steps) - q0;
            detail::CompactLane l = detail::compact_lane_at(words, pos0);
            for (uint32_t s = 0; s < n; ++s) {
              uint32_t e[kExecSlots / 4];
              detail::compact_step_exponents<true>(table, words, l, e);
              hand[w][s][lane] = make_uint4(e[0], e[1], e[2], e[3]);
            }
            ok &= detail::compact_lane_ok(r, l, pos0);
            pair_sync(w);  // handed over
            pair_sync(w);  // read
          });
    } else {
      // An owner: its tiles w, w + 16, ..., each followed by its helper's (8 on), the
      // reference's order of products.
      detail::compact_walk_tiles_words(
          v, t0 + w, t0 + tiles_per_strip, 2 * kWarps, lane, stage[warp],
          [&](uint64_t tile, const detail::CompactRun& r, const auto& words, uint32_t pos0) {
            const uint32_t u = static_cast<uint32_t>(tile - t0);
            tile_body(u, std::false_type{}, r, words, pos0);
            if (u + kWarps < tiles_per_strip) {
              pair_sync(w);
              tile_body(u + kWarps, std::true_type{}, r, words, pos0);
              pair_sync(w);
            }
          });
    }
  } else {
    const auto walk_body = [&](uint64_t tile, const detail::CompactRun& r, const auto& words,
                               uint32_t pos0) {
      tile_body(static_cast<uint32_t>(tile - t0), std::false_type{}, r, words, pos0);
    };
    if constexpr (kPrefetch<NB> == 2) {
      __shared__ uint32_t heads[kWarps][2 * detail::kCompactHeadWords];
      detail::compact_walk_tiles(v, t0 + warp, t0 + tiles_per_strip, kWarps, lane, stage[warp],
                                 heads[warp], walk_body);
    } else if constexpr (kPrefetch<NB> == 1) {
      detail::compact_walk_tiles_words(v, t0 + warp, t0 + tiles_per_strip, kWarps, lane,
                                       stage[warp], walk_body);
    } else {
      for (uint32_t u = warp; u < tiles_per_strip; u += kWarps) {
        const uint64_t tile = t0 + u;
        uint64_t first = 0;
        uint32_t n = 0;
        const bool staged = detail::compact_stage_tile(v, tile, lane, stage[warp], &first, &n);
        detail::compact_with_lane_words(
            v, tile, lane, detail::compact_lane_before(v, tile, lane), staged, first, n,
            [&](const detail::CompactRun& r, const auto& words, uint32_t pos0) {
              tile_body(u, std::false_type{}, r, words, pos0);
            });
      }
    }
  }
  if (!ok) atomicOr(p.status, 1u);
  // The warp sums, in the staging words once every warp is done with them (a helper's are
  // zero, and not added: the sums take the first 8 warps').
  __syncthreads();
  detail::exec_strip_sums<NB, kWarps>(reinterpret_cast<float(*)[32][NB * 4]>(&stage[0][0]), acc,
                                      strip, v.rows, p.batch, mp.y, v.rows);
}

// Where the kernels with helpers run on the current device: its multiprocessors and the
// blocks with helpers one of them holds, at batch 1-8 and 9-16 (0 where a block's shared
// memory exceeds the device's limit, as sm_86's and sm_89's 99 KB), read once per device.
struct HelperFit {
  uint32_t sms;
  uint32_t blocks_per_sm[2];  // compact_gemm_kernel<1, true>, <2, true>
};
template <uint32_t NB>
Status set_helper_shared_bytes() {
  DF11_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(compact_gemm_kernel<NB, true>,
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(kHelperSharedBytes)),
                            "compact GEMM: shared memory of the kernel with helpers");
  return Status::ok();
}
template <uint32_t NB>
Result<int> helper_blocks_per_sm() {
  DF11_RETURN_IF_ERROR(set_helper_shared_bytes<NB>());
  int blocks = 0;
  DF11_CUDA_RETURN_IF_ERROR(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, compact_gemm_kernel<NB, true>,
                                                    2 * kWarps * 32, kHelperSharedBytes),
      "compact GEMM: blocks with helpers per multiprocessor");
  return blocks;
}
Result<HelperFit> helper_fit() {
  constexpr int kCached = 64;
  // 1 << 31 once known | sms << 16 | blocks at batch 9-16 << 8 | blocks at batch 1-8.
  static std::atomic<uint32_t> known[kCached] = {};
  int device = 0;
  DF11_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "compact GEMM: cudaGetDevice");
  const bool cached = device >= 0 && device < kCached;
  uint32_t k = cached ? known[device].load(std::memory_order_relaxed) : 0;
  if (k == 0) {
    int sms = 0;
    int optin = 0;
    DF11_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                              "compact GEMM: multiprocessors");
    DF11_CUDA_RETURN_IF_ERROR(
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
        "compact GEMM: shared memory per block");
    int b1 = 0;
    int b2 = 0;
    if (static_cast<size_t>(optin) >= kHelperSharedBytes) {
      DF11_ASSIGN_OR_RETURN(b1, helper_blocks_per_sm<1>());
      DF11_ASSIGN_OR_RETURN(b2, helper_blocks_per_sm<2>());
    }
    k = (1u << 31) | (static_cast<uint32_t>(std::clamp(sms, 1, (1 << 15) - 1)) << 16) |
        (static_cast<uint32_t>(std::clamp(b2, 0, 255)) << 8) |
        static_cast<uint32_t>(std::clamp(b1, 0, 255));
    if (cached) known[device].store(k, std::memory_order_relaxed);
  }
  return HelperFit{(k >> 16) & ((1u << 15) - 1), {k & 255, (k >> 8) & 255}};
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

Status launch_compact_gemm(std::span<const CompactGemm> gemms, uint32_t batch, uint32_t* d_status,
                           CUstream_st* stream, CompactGemmKernel choice) {
  const std::string what = "launch_compact_gemm";
  if (batch < 1 || batch > kCompactMaxBatch) {
    return Status(ErrorCode::kInvalidArgument, what + ": batch " + std::to_string(batch) +
                                                   " is not within 1.." +
                                                   std::to_string(kCompactMaxBatch));
  }
  if (d_status == nullptr) return Status(ErrorCode::kInvalidArgument, what + ": d_status is null");
  struct Item {
    MatrixParams m;
    uint64_t strips;
  };
  std::vector<Item> items;
  for (size_t i = 0; i < gemms.size(); ++i) {
    const std::string name = what + ": matrix " + std::to_string(i);
    const CompactGemm& gemm = gemms[i];
    if (gemm.d_x == nullptr || gemm.d_y == nullptr) {
      return Status(ErrorCode::kInvalidArgument, name + ": d_x or d_y is null");
    }
    DF11_ASSIGN_OR_RETURN(const CompactGeometry g,
                          compact_geometry(gemm.w.rows, gemm.w.cols, name));
    Item it{};
    DF11_ASSIGN_OR_RETURN(it.m.v, detail::compact_launch_view(gemm.w, g, nullptr, name));
    it.m.x = gemm.d_x;
    it.m.y = gemm.d_y;
    it.m.x_vec = aligned16(gemm.d_x) && gemm.w.cols % 8 == 0;
    it.strips = g.exec.strips;
    items.push_back(it);
  }
  // The long strips first (the order of a strip's sums does not depend on it).
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.m.v.cols > b.m.v.cols; });
  const auto kernel = batch <= 8    ? compact_gemm_kernel<1, false>
                      : batch <= 16 ? compact_gemm_kernel<2, false>
                                    : compact_gemm_kernel<4, false>;
  uint64_t helper_max = 0;  // strips a launch with helpers may have at most
  const bool b2 = batch > 8;
  if (batch <= DF11_COMPACT_HELPER_MAX_BATCH && choice != CompactGemmKernel::kPlain) {
    DF11_ASSIGN_OR_RETURN(const HelperFit fit, helper_fit());
    const uint32_t fits = fit.blocks_per_sm[b2 ? 1 : 0];
    if (choice == CompactGemmKernel::kHelpers) {
      helper_max = fits >= 1 ? UINT64_MAX : 0;
    } else if (fits >= kHelperBlocksPerSm) {  // as many warps as the plain kernel
      helper_max = uint64_t{DF11_COMPACT_HELPER_BLOCKS} * fit.sms;
    }
    if (helper_max > 0) {  // set per launch: a reset device forgets it
      DF11_RETURN_IF_ERROR(b2 ? set_helper_shared_bytes<2>() : set_helper_shared_bytes<1>());
    }
  }
  const auto helper_kernel = b2 ? compact_gemm_kernel<2, true> : compact_gemm_kernel<1, true>;
  auto p = std::make_unique<GemmParams>();
  p->status = d_status;
  p->batch = batch;
  for (size_t at = 0; at < items.size(); at += kMaxMatrices) {
    p->n = static_cast<uint32_t>(std::min<size_t>(kMaxMatrices, items.size() - at));
    uint64_t blocks = 0;
    for (uint32_t i = 0; i < p->n; ++i) {
      p->m[i] = items[at + i].m;
      p->begin[i] = static_cast<uint32_t>(blocks);
      blocks += items[at + i].strips;
    }
    if (blocks > INT32_MAX) {
      return Status(ErrorCode::kResourceLimit, what + ": too many rows in one launch");
    }
    p->begin[p->n] = static_cast<uint32_t>(blocks);
    if (blocks <= helper_max) {
      helper_kernel<<<static_cast<uint32_t>(blocks), 2 * kWarps * 32, kHelperSharedBytes, stream>>>(
          *p);
    } else {
      kernel<<<static_cast<uint32_t>(blocks), kWarps * 32, 0, stream>>>(*p);
    }
    DF11_CUDA_RETURN_IF_ERROR(cudaGetLastError(), "compact GEMM kernel launch");
  }
  return Status::ok();
}

}  // namespace df11::cuda
