// The decode pipeline of the CUDA kernels (design: decoder/cuda/NOTES.md),
// shared by the decode kernel (decode_kernel.cu: decoded weights to global memory) and the
// fused decode+GEMV kernel (fused_gemv.cu: decoded weights multiplied in place). Both run
// decode_blocks() with a different Sink for step 6 below.
//
// One thread block of 512 threads decodes one 4096-byte stream block per iteration, thread t
// taking window t, and loops over a contiguous range of blocks (persistent grid: a few thread
// blocks per multiprocessor; the lookup tables are staged once per group, not per block); the
// decode kernel then takes runs of blocks from the launch's tail pool (decode_blocks, kPool).
// Per iteration:
//   1. the window's bytes, two gap fields and three output positions were requested during
//      the previous iteration; the block's sign_mantissa bytes are requested now, straight
//      into shared memory (bulk copy or cp.async);
//   2. one decode pass, up to three codes per lookup (multi-code table): exponents go, a
//      byte each, to the thread's private 64-byte slot in shared memory;
//   3. the next block's inputs are requested; block-wide exclusive scan of the counts (warp
//      shuffles, then one shared array of 16 warp totals summed with REDUX; one barrier);
//   4. checks (gap chain, counts, stream end) -> status record on failure;
//   5. the slot is copied, compacted (aligned 32-bit stores), into a shared staging buffer;
//   6. barrier; the Sink consumes the block's weights [op0, op1): exponents in the staging
//      buffer, sign_mantissa bytes in shared memory (or global memory, compact).
// The fast configuration double-buffers staging and sign_mantissa (two barriers per block);
// the compact one (GPUs with less shared memory per block) single-buffers the exponents,
// reads sign_mantissa from global memory and adds a third barrier.
//
// A Sink provides:
//   void consume(const BlockOut&)   step 6; must leave the exponent bytes it was given zero
//                                   again before that staging buffer is scattered into next
//                                   (scatter_exponents ORs into zeros)
//   void prepare(const BlockOut&)   after the block's scan barrier, before step 5: shared
//                                   memory that step 6 of the previous block read may be
//                                   rewritten here for step 6 of this one
//   void after_block(const BlockOut&)   compact configuration only, after its third barrier
//   bool needs_next_block(const BlockOut&) const   whether the block after the thread block's range
//   (same
//                                   group) must be decoded too; uniform over the block
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "decode_core.h"
#include "status_record.h"

namespace df11::cuda {
namespace detail {
namespace {

constexpr uint32_t kThreads = kWindowsPerBlock;  // one thread per window (spec 3.1)
constexpr uint32_t kWarps = kThreads / 32;
constexpr uint32_t kUnit = kOutputUnit;  // weights per thread per step (8 B in, 16 B out)
// Registers are capped so that two thread blocks of 512 threads fit a multiprocessor (the
// fused kernel, the compact configuration), or three (the decode kernel's fast
// configuration: 40 registers, no spills; the third thread block is what makes it faster).
constexpr uint32_t kMinBlocksPerSm = 2;
constexpr uint32_t kMinBlocksPerSmFast = 3;
constexpr uint32_t kFullMask = 0xFFFFFFFFu;

template <uint32_t kMaxGroups>
struct KernelBatch {
  GroupStatusRecord* status;  // one per group of this launch
  uint32_t n_groups;
  uint32_t total_blocks;
  uint32_t epoch;
  // Tail pool (decode kernel only; see decode_blocks): blocks [pool_start, total_blocks) are
  // handed out `chunk` at a time through `*pool` (epoch << 32 | blocks taken, in the
  // workspace). pool == nullptr: static ranges over all blocks (pool_start = total_blocks).
  // The host sets a pool only with chunk >= 2 and at least two blocks in every static range:
  // every thread block then takes runs until the pool is empty.
  unsigned long long* pool;
  uint32_t pool_start;
  uint32_t chunk;
  SharedLayout layout;
  KernelGroup groups[kMaxGroups];
};

// Shared memory through 32-bit shared-window addresses: the hot loops then need one add per
// access (generic pointers into shared memory cost a window-base computation on sm_90).
// A value the compiler cannot see through. Table indices go through it so that index and
// scale fold into one LEA with the base (the compiler would otherwise merge the index's
// shift with the scale into a shift and a mask, then add the base).
__device__ __forceinline__ uint32_t opaque(uint32_t v) {
  asm("mov.b32 %0, %0;" : "+r"(v));
  return v;
}

// The opaque move keeps the address in a register: without it the compiler recomputes it
// (S2R of the cluster CTA id and a shift) inside the decode loop.
__device__ __forceinline__ uint32_t shared_address(const void* p) {
  uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("mov.b32 %0, %0;" : "+r"(a));
  return a;
}
__device__ __forceinline__ uint32_t lds_u32(uint32_t a) {
  uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
  return v;
}
__device__ __forceinline__ uint32_t lds_u16(uint32_t a) {
  uint16_t v;
  asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(a) : "memory");
  return v;
}
__device__ __forceinline__ uint2 lds_u64(uint32_t a) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(a) : "memory");
  return v;
}
__device__ __forceinline__ void sts_u8(uint32_t a, uint32_t v) {
  asm volatile("st.shared.u8 [%0], %1;" ::"r"(a), "r"(v) : "memory");
}
__device__ __forceinline__ void sts_u16(uint32_t a, uint32_t v) {
  asm volatile("st.shared.u16 [%0], %1;" ::"r"(a), "h"(static_cast<uint16_t>(v)) : "memory");
}
__device__ __forceinline__ void sts_u32(uint32_t a, uint32_t v) {
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(a), "r"(v) : "memory");
}
__device__ __forceinline__ void sts_zero64(uint32_t a) {
  asm volatile("st.shared.v2.u32 [%0], {%1, %1};" ::"r"(a), "r"(0) : "memory");
}
__device__ __forceinline__ void sts_u128(uint32_t a, uint32_t x, uint32_t y, uint32_t z,
                                         uint32_t w) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(x), "r"(y), "r"(z), "r"(w)
               : "memory");
}
__device__ __forceinline__ void sts_zero128(uint32_t a) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};" ::"r"(a), "r"(0) : "memory");
}
// Atomic OR without a result (RED): the words two threads' exponent runs share.
__device__ __forceinline__ void red_or_u32(uint32_t a, uint32_t v) {
  asm volatile("red.shared.or.b32 [%0], %1;" ::"r"(a), "r"(v) : "memory");
}

// Inclusive scan over the warp; the shuffle's own in-range predicate guards the add (two
// instructions per step).
__device__ __forceinline__ uint32_t warp_inclusive_scan(uint32_t v) {
#pragma unroll
  for (uint32_t d = 1; d < 32; d <<= 1) {
    asm("{\n\t.reg .u32 u;\n\t.reg .pred p;\n\t"
        "shfl.sync.up.b32 u|p, %0, %1, 0, 0xffffffff;\n\t"
        "@p add.u32 %0, %0, u;\n\t}"
        : "+r"(v)
        : "r"(d));
  }
  return v;
}

// A window's inputs as loaded: nothing here is used until the next iteration, so that the
// loads stay in flight during the scan, the staging and the stores of the current block.
struct RawInputs {
  uint32_t a, b, c;  // fast: little-endian words of bytes [8w, 8w+8) and, when the next
                     // thread cannot lend it, [8w+8, 8w+12); otherwise big-endian words
  GapBytes gaps;
  uint32_t op0, op1, op2;
};

// Every block but the group's last one or two, with aligned arrays: its window bytes (and
// the next window's first 4), both gap fields and output positions b..b+2 all lie inside
// their arrays, so its loads need no bounds checks (a block-uniform condition).
__device__ __forceinline__ bool interior_block(const KernelGroup& g, uint32_t block) {
  return block < g.interior_blocks;  // precomputed: see make_kernel_group()
}

struct WindowPlace {
  uint64_t w, byte;
  bool fast;      // one aligned 8-byte load, the rest from the next thread or one more load
  bool use_next;  // the next thread's load covers bytes [8w+8, 8w+12)
};

// Edge blocks: where each window's loads may fall off the end of the stream.
__device__ __forceinline__ WindowPlace place_of(const KernelGroup& g, uint32_t block, uint32_t t) {
  WindowPlace p;
  p.w = uint64_t{block} * kWindowsPerBlock + t;
  p.byte = p.w * kBytesPerWindow;
  p.fast = (g.flags & kStreamAligned8) && p.byte + 12 <= g.n_bytes;
  p.use_next = t % 32 != 31 && p.byte + 20 <= g.n_bytes;  // the next thread is fast too
  return p;
}

__device__ __forceinline__ RawInputs load_raw(const KernelGroup& g, uint32_t block, uint32_t t) {
  RawInputs r;
  if (interior_block(g, block)) {
    const uint64_t w = uint64_t{block} * kWindowsPerBlock + t;
    const uint8_t* at = g.stream + w * kBytesPerWindow;
    load_u64(at, r.a, r.b);
    r.c = t % 32 == 31 ? load_u32(at + kBytesPerWindow) : 0u;  // the others shuffle it
    const uint8_t* gp = g.gaps + w * kGapBits / 8;
    r.gaps = GapBytes{load_u8(gp), load_u8(gp + 1), load_u8(gp + 2)};
    const uint8_t* op = g.output_positions + 4 * uint64_t{block};
    r.op0 = load_u32(op);
    r.op1 = load_u32(op + 4);
    r.op2 = load_u32(op + 8);
    return r;
  }
  const WindowPlace p = place_of(g, block, t);
  if (p.fast) {
    load_u64(g.stream + p.byte, r.a, r.b);
    r.c = p.use_next ? 0u : load_u32(g.stream + p.byte + 8);
  } else {
    load_window(g, p.w, r.a, r.b, r.c);
  }
  r.gaps = load_gap_bytes(g, p.w);
  r.op0 = load_output_position(g, block);
  r.op1 = load_output_position(g, uint64_t{block} + 1);
  r.op2 = load_output_position(g, uint64_t{block} + 2);
  return r;
}

// All 32 lanes call this (one shuffle).
__device__ __forceinline__ WindowInputs finish_inputs(const RawInputs& r, const KernelGroup& g,
                                                      uint32_t block, uint32_t t) {
  const uint32_t next_a = __shfl_down_sync(kFullMask, r.a, 1);
  const uint64_t w = uint64_t{block} * kWindowsPerBlock + t;
  WindowInputs in;
  if (interior_block(g, block)) {
    in.w0 = swap_bytes(r.a);
    in.w1 = swap_bytes(r.b);
    in.w2 = swap_bytes(t % 32 == 31 ? r.c : next_a);
  } else {
    const WindowPlace p = place_of(g, block, t);
    if (p.fast) {
      in.w0 = swap_bytes(r.a);
      in.w1 = swap_bytes(r.b);
      in.w2 = swap_bytes(p.use_next ? next_a : r.c);
    } else {
      in.w0 = r.a;
      in.w1 = r.b;
      in.w2 = r.c;
    }
  }
  gap_pair(r.gaps, w, in.gap, in.gap_next);
  in.op0 = r.op0;
  in.op1 = r.op1;
  in.op2 = r.op2;
  return in;
}

__device__ __forceinline__ void cp_async_16(uint32_t smem, const void* gmem, uint32_t src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(gmem),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n"); }
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

// Hopper's bulk copy engine: one thread moves a block's sign_mantissa bytes into shared
// memory and an mbarrier tells the others when they have landed (sm_90 and later; older
// GPUs use cp.async, 16 bytes per thread).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define DF11_BULK_COPY 1
#else
#define DF11_BULK_COPY 0
#endif

__device__ __forceinline__ void mbar_init(uint32_t mbar) {
#if DF11_BULK_COPY
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(mbar) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}
// Thread 0: expect `bytes` and start their copy (size and both addresses 16-byte multiples).
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, uint32_t bytes,
                                          uint32_t mbar) {
#if DF11_BULK_COPY
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // after generic reads of dst
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(mbar),
               "r"(bytes)
               : "memory");
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(dst),
      "l"(src), "r"(bytes), "r"(mbar)
      : "memory");
#endif
}
__device__ __forceinline__ void mbar_wait(uint32_t mbar, uint32_t parity) {
#if DF11_BULK_COPY
  asm volatile(
      "{\n\t.reg .pred done;\n"
      "wait_%=:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
      "@!done bra wait_%=;\n\t}" ::"r"(mbar),
      "r"(parity)
      : "memory");
#endif
}

// 8 sign_mantissa bytes of weights [gstart, gstart + 8) from global memory; past n: 0.
__device__ __forceinline__ uint2 load_sign_mantissa(const KernelGroup& g, uint32_t gstart) {
  if ((g.flags & kSignMantissaAligned16) && uint64_t{gstart} + kUnit <= g.n_elements) {
    return __ldg(reinterpret_cast<const uint2*>(g.sign_mantissa + gstart));
  }
  uint32_t w[2] = {0, 0};
#pragma unroll
  for (uint32_t k = 0; k < kUnit; ++k) {
    const uint32_t v =
        uint64_t{gstart} + k < g.n_elements ? __ldg(g.sign_mantissa + gstart + k) : 0u;
    w[k / 4] |= v << (8 * (k % 4));
  }
  return make_uint2(w[0], w[1]);
}

// Step 6 of the sinks that store BF16 (StoreSink, RowSink): writes the weights out[first + k],
// k < 8, whose index first + k lies in [lo, hi). One 16-byte store when `vector` (out + first
// 16-byte aligned, first a multiple of 8) and the whole unit is inside; element stores otherwise.
// Indices are modulo 2^32, so that a unit may start before out[0] (then `vector` must be false).
__device__ __forceinline__ void write_unit(uint16_t* out, bool vector, uint32_t first, uint32_t lo,
                                           uint32_t hi, const uint2& sm, const uint2& ex) {
  if (vector && first >= lo && first + kUnit <= hi) {
    uint4 v;
    join4(sm.x, ex.x, v.x, v.y);
    join4(sm.y, ex.y, v.z, v.w);
    *reinterpret_cast<uint4*>(out + first) = v;
    return;
  }
  const uint32_t s[2] = {sm.x, sm.y};
  const uint32_t e[2] = {ex.x, ex.y};
#pragma unroll
  for (uint32_t k = 0; k < kUnit; ++k) {
    const uint32_t i = first + k;
    if (i >= lo && i < hi) {
      out[i] = join1((s[k / 4] >> (8 * (k % 4))) & 0xFF, (e[k / 4] >> (8 * (k % 4))) & 0xFF);
    }
  }
}

// Rare path (a corrupt stream): keeps the problem a sequential decoder would meet first.
__device__ __noinline__ void report(GroupStatusRecord* rec, uint32_t epoch, uint32_t block,
                                    uint32_t problem, uint32_t detail) {
  const unsigned long long key = record_key(epoch, block, problem);
  if (key > atomicMax(&rec->key, key)) atomicExch(&rec->detail, detail);
}

// What step 6 gets: block facts, uniform over the thread block, and shared addresses.
struct BlockOut {
  const KernelGroup* g;
  uint32_t gi;           // group index in the launch
  uint32_t lb;           // block index within the group
  uint32_t op0, op1;     // the block's weights [op0, op1), clamped to the group
  uint32_t base;         // staging (and sign_mantissa stage) byte of weight i: i - base
  uint32_t staging;      // shared address of the exponent staging buffer
  uint32_t sm_stage_at;  // shared address of the sign_mantissa stage (if sm_staged)
  bool sm_staged;
  uint32_t parity;  // alternates block by block
  // Weights [own_from, own_to) of this group lie in the thread block's range of blocks
  // (own_to is 2^32 - 1 until the block after the range).
  uint32_t own_from, own_to;
  bool extra;  // past the thread block's range (needs_next_block asked for it)
};

// Dynamic shared memory: the joined table (layout.table_rows rows of 256 16-bit entries),
// the slots (512 x layout.slot_stride bytes), the exponent staging buffer(s), then (fast
// configuration) the two sign_mantissa buffers. Each buffer is `layout.staging_bytes`. The
// fast configuration has Sink::kExponentBuffers exponent buffers: one suffices when step 6
// reads the whole buffer and zeroes it as it reads (StoreSink: the next scatter comes after
// the next block's scan barrier, which every thread reaches after its step 6); the fused
// sink zeroes a block's bytes one block later and needs two.
template <bool kCompact, uint32_t kExponentBuffers>
constexpr uint32_t staging_buffers() {
  return kCompact ? 1 : kExponentBuffers + 2;
}
// Bytes of dynamic shared memory for `buffers` staging buffers (all multiples of 16).
inline uint32_t dynamic_shared_bytes(const SharedLayout& l, uint32_t buffers) {
  return l.table_rows * kLutRowSize * 2 + kThreads * l.slot_stride + buffers * l.staging_bytes;
}

// Thread 0 of a thread block with a pool, just before the second barrier: takes the run
// after the one that ends at `run_end` and leaves its first block in *next (none:
// total_blocks); the launch's last take sets the counter back to 0 (pool_take). The atomic's
// latency is paid there, once per run, by warp 0: issued earlier, its result held registers
// across the checks and the compaction and gained nothing; in a function not inlined, the
// call cost a spill on every block (decoder/cuda/NOTES.md).
__device__ __forceinline__ void take_run(unsigned long long* pool, uint32_t chunk, uint32_t epoch,
                                         uint32_t pool_start, uint32_t run_end,
                                         uint32_t total_blocks, uint32_t* next) {
  const unsigned long long ticket = atomicAdd(pool, static_cast<unsigned long long>(chunk));
  const PoolTake take =
      pool_take(ticket, chunk, epoch, pool_start, run_end, total_blocks, gridDim.x);
  if (take.reset) atomicCAS(pool, ticket + chunk, 0ull);
  *next = take.next;
}

// kPool (the decode kernel): the thread blocks' static ranges cover blocks [0, pool_start)
// only; the rest, the tail pool, is handed out in runs of `chunk` blocks by a counter in the
// workspace, so that thread blocks that run faster (the warp schedulers favour the older
// thread blocks of an SM) take more of it and all end together (decoder/cuda/NOTES.md). Within
// a run the next block is b + 1, as in a static range; a thread block takes its next run two
// blocks before its current one ends (thread 0, before the second barrier), and step 3 of
// the run's last block reads it from shared memory and prefetches its first block as usual.
// Each run is handed to exactly one thread block of the launch, whichever SM it runs on.
// The counter holds epoch << 32 | blocks taken: every thread block raises it to epoch << 32
// first, and the launch's last take sets it back to 0 (pool_take, decode_core.h), so a launch
// needs no memset and a replay of a captured launch (same epoch) finds the whole pool. A take
// that returns another epoch (a workspace shared by two launches in flight, which the API
// forbids) makes the thread block decode the blocks after its run itself, run by run to the
// end: blocks may then be decoded twice (same bytes, same reports), never skipped.
//
// decode_range() runs the loop over the thread block's static range of blocks (numbered over
// the whole launch), which `range()` returns as {begin, end}: decode_blocks() gives each
// thread block its share of the launch's blocks, the rows kernel (rows_kernel.cu) the blocks
// that cover one row. (A callable, called where decode_blocks() computed the range before it
// was shared: the decode kernels' code stays as it was.)
template <uint32_t kMaxGroups, bool kCompact, class Sink, bool kPool, class Range>
__device__ __forceinline__ void decode_range(const KernelBatch<kMaxGroups>& batch, Sink& sink,
                                             const Range& range) {
  constexpr uint32_t kExponentBuffers = kCompact ? 1 : Sink::kExponentBuffers;
  __shared__ uint32_t multi[kMultiEntries];
  __shared__ uint32_t warp_totals[2][kWarps];
  __shared__ alignas(8) unsigned long long sm_barriers[2];  // one per sign_mantissa buffer
  __shared__ uint32_t pool_next;  // kPool: the next run's first block (none: total_blocks)
  extern __shared__ uint4 dynamic_shared[];
  const SharedLayout& layout = batch.layout;
  const uint32_t staging_bytes = layout.staging_bytes;
  const uint32_t table_entries = layout.table_rows * kLutRowSize;
  const uint32_t table_at = shared_address(dynamic_shared);
  const uint32_t slots_at = table_at + 2 * table_entries;
  const uint32_t staging_base_at = slots_at + kThreads * layout.slot_stride;

  const uint32_t t = threadIdx.x;
  const uint32_t lane = t % 32;
  const uint32_t warp = t / 32;
  const uint2 static_range = range();
  const uint32_t begin = static_range.x;
  const uint32_t end = static_range.y;
  if (begin >= end) return;
  // kPool: a take with pool == nullptr never happens; no take at all leaves "none" here.
  const bool pooled = kPool && batch.pool != nullptr;
  if (kPool && t == 0) {
    pool_next = batch.total_blocks;
    // Before this thread's first take (same address, program order); ordered before the
    // other threads' reads of pool_next by the first table staging's barriers.
    if (pooled) atomicMax(batch.pool, static_cast<unsigned long long>(batch.epoch) << 32);
  }

  // Group of block `begin`: the last one starting at or before it (every group has blocks).
  uint32_t gi = 0;
  {
    uint32_t lo = 0, hi = batch.n_groups;
    while (hi - lo > 1) {
      const uint32_t mid = (lo + hi) / 2;
      if (batch.groups[mid].first_block <= begin)
        lo = mid;
      else
        hi = mid;
    }
    gi = lo;
  }
  // The staging buffers start zeroed (scatter_exponents ORs into them; the output step
  // zeroes what it read). The first table staging's barrier orders this before any use.
  for (uint32_t i = 16 * t; i < kExponentBuffers * staging_bytes; i += 16 * kThreads) {
    sts_zero128(staging_base_at + i);
  }
  const uint32_t mbar_at = shared_address(sm_barriers);
  // warp_totals[parity][warp] through a pinned address like every other shared access of the
  // loop: indexed as an array, ptxas kept the joined-table base in a uniform register, used
  // 56 registers instead of 64 and decoded slower.
  const uint32_t totals_at = shared_address(warp_totals);
  if (DF11_BULK_COPY && !kCompact && t == 0) {
    mbar_init(mbar_at);
    mbar_init(mbar_at + 8);
  }
  uint32_t mbar_phases = 0;  // bit p: parity of the next completion of buffer p's barrier
  uint32_t staged = 0xFFFFFFFFu;
  RawInputs raw = load_raw(batch.groups[gi], begin - batch.groups[gi].first_block, t);
  uint32_t parity = 0;
  const uint32_t multi_at = shared_address(multi);
  const auto tab = [=](uint32_t i) { return lds_u16(table_at + 2 * opaque(i)); };
  const auto multi_tab = [=](uint32_t i) { return lds_u32(multi_at + 4 * opaque(i)); };
  const uint32_t slot_at = slots_at + t * layout.slot_stride;

  // The end of the current run: the static range's, growing past `end` while the sink needs
  // the next block; kPool: then each run's from the pool.
  uint32_t stop = end;
  uint32_t own_from = 0, own_to = 0xFFFFFFFFu;  // see BlockOut
  uint32_t after = batch.total_blocks;  // kPool: the run after the current one (none: total)
  // The static range, then (kPool) the runs taken from the pool, through two copies of the
  // block loop (decode_block_body.inc says why).
  for (uint32_t b = begin; b < stop; ++b) {
#include "decode_block_body.inc"
  }
  if constexpr (kPool) {
    while (after < batch.total_blocks) {
      const uint32_t from = after;
      stop = from + min(batch.chunk, batch.total_blocks - from);
      after = batch.total_blocks;
      for (uint32_t b = from; b < stop; ++b) {
#include "decode_block_body.inc"
      }
    }
  }
}

// Thread block blockIdx.x's static range: its share of blocks [0, pool_start) (kPool) or of
// all the launch's blocks.
template <uint32_t kMaxGroups, bool kCompact, class Sink, bool kPool = false>
__device__ __forceinline__ void decode_blocks(const KernelBatch<kMaxGroups>& batch, Sink& sink) {
  decode_range<kMaxGroups, kCompact, Sink, kPool>(batch, sink, [&batch] {
    const uint32_t n_static = kPool ? batch.pool_start : batch.total_blocks;
    return make_uint2(static_cast<uint32_t>(uint64_t{blockIdx.x} * n_static / gridDim.x),
                      static_cast<uint32_t>(uint64_t{blockIdx.x + 1} * n_static / gridDim.x));
  });
}

}  // namespace
}  // namespace detail
}  // namespace df11::cuda
