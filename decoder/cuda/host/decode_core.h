// The CUDA decoder's per-window and per-block algorithm, written once for two compilers: the
// kernel (decode_kernel.cu, nvcc) and the host emulation (decode_emulation.cpp, the host
// compiler) include this file, so that tests without a GPU run exactly the arithmetic the GPU
// runs. Nothing here allocates or synchronises; every read is clamped to its array.
//
// Vocabulary (spec 3.1): a window is 8 stream bytes (one GPU thread), a block is 512
// windows (one thread block per iteration). Within a block, thread t decodes every code
// that STARTS in its window, from bit gap[t] on; an exclusive prefix sum of the per-thread
// counts gives each code's place after output_positions[b].
#pragma once

#include <cstdint>

#include "df11/group.h"

#if defined(__CUDACC__)
#define DF11_HD __host__ __device__ __forceinline__
#else
#define DF11_HD inline
#endif

namespace df11::cuda::detail {

// ---- portable bit operations (intrinsics on the device, plain C++ on the host) ----

// (hi:lo << s) >> 32 for s in 0..31: the 32 bits starting s bits into hi.
DF11_HD uint32_t funnel_left(uint32_t lo, uint32_t hi, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_l(lo, hi, s);
#else
  s &= 31;
  return s == 0 ? hi : (hi << s) | (lo >> (32 - s));
#endif
}

// Byte selector as PRMT / __byte_perm: result byte k = byte (sel >> 4k) & 7 of y:x.
DF11_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t sel) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, sel);
#else
  const uint64_t both = (uint64_t{y} << 32) | x;
  uint32_t r = 0;
  for (uint32_t k = 0; k < 4; ++k) {
    const uint32_t src = (sel >> (4 * k)) & 7;
    r |= static_cast<uint32_t>((both >> (8 * src)) & 0xFF) << (8 * k);
  }
  return r;
#endif
}

// Little-endian word of 4 stream bytes -> the same bytes as a big-endian (MSB-first) word.
DF11_HD uint32_t swap_bytes(uint32_t x) { return byte_perm(x, 0, 0x0123); }

DF11_HD uint8_t load_u8(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(p);
#else
  return *p;
#endif
}
DF11_HD uint32_t load_u32(const uint8_t* p) {  // p 4-byte aligned
#if defined(__CUDA_ARCH__)
  return __ldg(reinterpret_cast<const unsigned int*>(p));
#else
  return load_le32(p);
#endif
}
DF11_HD void load_u64(const uint8_t* p, uint32_t& lo, uint32_t& hi) {  // p 8-byte aligned
#if defined(__CUDA_ARCH__)
  const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
  lo = v.x;
  hi = v.y;
#else
  lo = load_le32(p);
  hi = load_le32(p + 4);
#endif
}

// ---- the kernel-facing description of one group (host fills it, device reads it) ----

// Alignment facts the host checks once, so that the kernel picks wide loads and stores only
// where they are legal (device pointers of a batch may point anywhere inside a buffer).
enum KernelGroupFlags : uint32_t {
  kStreamAligned8 = 1u << 0,  // encoded_exponent 8-byte aligned
  kOpAligned4 = 1u << 1,      // output_positions 4-byte aligned
  kSignMantissaAligned16 = 1u << 2,
  kOutputAligned16 = 1u << 3,
};

struct KernelGroup {
  const uint8_t* luts;
  const uint8_t* stream;
  const uint8_t* sign_mantissa;
  const uint8_t* output_positions;
  const uint8_t* gaps;
  uint16_t* out;
  uint64_t n_bytes;     // stream bytes
  uint64_t gap_bytes;   // bytes of the packed gap array
  uint32_t n_elements;  // < 2^32 (output positions are uint32)
  uint32_t n_blocks;
  uint32_t first_block;  // index of this group's block 0 among all blocks of the launch
  uint32_t n_luts;       // 2..18, validated on the host
  uint32_t flags;        // KernelGroupFlags
  // Blocks 0 .. interior_blocks - 1 have all their loads inside the arrays with aligned
  // wide loads (decode_kernel.cu, interior_block()); 0 if the arrays are not aligned.
  uint32_t interior_blocks;
  uint64_t row_depths;  // 3 bits per decode row r (bits 3r..3r+2): its depth below the root
                        // (GroupInfo::lut_row_depth), or 7 if no pointer reaches it
};

inline constexpr uint32_t kUnreachableRow = 7;

DF11_HD uint32_t row_depth(uint64_t row_depths, uint32_t row) {
  return static_cast<uint32_t>(row_depths >> (3 * row)) & 7;
}

// Per-group result record in the caller's workspace, written by the kernel only when a block
// finds a problem. `key` orders problems so that the one a sequential decoder meets first
// wins whatever the order the blocks run in: key = epoch << 32 | ~(block << 3 | problem),
// raised with atomicMax. The epoch identifies the launch (see launch_decode()): records of
// earlier launches have smaller keys and are ignored by the host.
struct GroupStatusRecord {
  unsigned long long key;  // 0: never written
  uint32_t detail;         // problem-specific (decoded count, window, gap); best effort when
                           // two blocks report at once
  uint32_t reserved;
};

// Problems a block can find, in the order they are reported (lower first within a block).
enum BlockProblem : uint32_t {
  kProblemNone = 0,
  kProblemFirstGap = 1,   // gaps field 0 is not 0
  kProblemBoundary = 2,   // a window's codes do not end where the next window's gap says
  kProblemUnusable = 3,   // a real code reaches a LUT entry no valid code uses
  kProblemStreamEnd = 4,  // the last code does not end in the stream's last byte
  kProblemCount = 5,      // codes decoded in the block != output_positions[b+1] - [b]
  kProblemTooMany = 6,    // block claims more weights than the shared buffer holds
  kProblemRowId = 7,      // rows decode: a row id outside the group (detail: its position)
};

// The problem to report of two (kProblemNone is no problem).
DF11_HD uint32_t first_problem(uint32_t a, uint32_t b) {
  if (a == kProblemNone) return b;
  if (b == kProblemNone) return a;
  return a < b ? a : b;
}

DF11_HD unsigned long long record_key(uint32_t epoch, uint32_t block, uint32_t problem) {
  return (static_cast<unsigned long long>(epoch) << 32) | (0xFFFFFFFFu - ((block << 3) | problem));
}
DF11_HD uint32_t record_epoch(unsigned long long key) { return static_cast<uint32_t>(key >> 32); }
DF11_HD uint32_t record_block(unsigned long long key) {
  return (0xFFFFFFFFu - static_cast<uint32_t>(key)) >> 3;
}
DF11_HD uint32_t record_problem(unsigned long long key) {
  return (0xFFFFFFFFu - static_cast<uint32_t>(key)) & 7;
}

// ---- the decode kernel's tail pool (decode_pipeline.cuh, decode_blocks) ----

// A launch's thread blocks share its last blocks through one 64-bit counter in the workspace,
// epoch << 32 | blocks taken: each thread block first raises it to epoch << 32 (atomicMax),
// then takes runs of `chunk` blocks (atomicAdd of chunk) until a take finds the pool empty.
// In a launch with a pool every thread block's static range has at least two blocks, so
// every thread block takes at least once and its last take is its only failing one: the
// launch makes (pool blocks) / chunk + grid takes. The one that returns
// pool + (grid - 1) * chunk blocks taken is therefore the launch's last use of the counter,
// and its thread block sets the counter back to 0 (a compare-and-swap from the value it
// left, so that a counter another launch has raised since is left alone). A launch then
// leaves its counter as it found it, and a replay of a captured launch, which carries the
// capture's epoch, finds the whole pool again.
struct PoolTake {
  uint32_t next;  // the first block of the next run; total_blocks: none
  bool reset;     // this was the launch's last take: set the counter back to 0
};

// What a take that returned `ticket` (the counter before the atomicAdd) means for a thread
// block whose current run ends at `run_end`, in a launch of `grid` thread blocks whose pool is
// blocks [pool_start, total_blocks).
DF11_HD PoolTake pool_take(unsigned long long ticket, uint32_t chunk, uint32_t epoch,
                           uint32_t pool_start, uint32_t run_end, uint32_t total_blocks,
                           uint32_t grid) {
  const uint32_t taken = static_cast<uint32_t>(ticket);
  const uint32_t pool = total_blocks - pool_start;
  uint32_t from = total_blocks;
  bool reset = false;
  if (static_cast<uint32_t>(ticket >> 32) != epoch) {
    from = run_end;  // another launch's counter: the blocks right after, run by run
  } else if (taken < pool) {
    from = pool_start + taken;
  } else {
    reset = uint64_t{taken} == uint64_t{pool} + uint64_t{grid - 1} * chunk;
  }
  return {from < run_end ? total_blocks : from, reset};  // never backwards
}

// ---- decode tables ----

// Rows of the joined decode table: root + up to 16 subtables (spec 3.3). Entry encoding:
//   (length << 8) | exponent   a symbol (length 1..32, so the entry is >= 0x100)
//   r (1..16)                  continue in row r with the following 8 bits
//   0                          an unusable entry (spec 3.3): a symbol whose code length does
//                              not fit its row's depth (8d+1 .. 8d+8 bits), a pointer that
//                              does not lead exactly one level down, or a row no pointer
//                              reaches. Decoding a real code that reaches one is corruption.
inline constexpr uint32_t kTableRows = 1 + kMaxSubtables;
inline constexpr uint32_t kTableEntries = kTableRows * kLutRowSize;  // 4352

// Entry i (row i / 256, index i % 256) of the joined table for a group with `n_luts` rows
// (clamped to 2..18 so that no input reads outside luts[0, 256 * n_luts)). Symbols shorter
// than `min_length` bits are unusable too: the kernel sizes each thread's exponent slot for
// codes of at least that length (slot_stride_for), and the host takes it from the validated
// tables (shortest_code_length), so only device data that differs from them meets this.
DF11_HD uint32_t table_entry(const uint8_t* luts, uint32_t n_luts, uint64_t row_depths,
                             uint32_t min_length, uint32_t i) {
  const uint32_t nl = n_luts < 2 ? 2 : (n_luts > kMaxLutRows ? kMaxLutRows : n_luts);
  const uint32_t row = i / kLutRowSize;
  const uint32_t depth = row_depth(row_depths, row);
  if (row + 1 >= nl || depth > 3) return 0;  // no such decode row, or unreachable
  const uint32_t v = load_u8(luts + i);
  if (v >= kFirstPointerEntry) {
    const uint32_t target = kLutRowSize - v;  // spec 3.3: entry v continues in row 256 - v
    return target + 1 < nl && row_depth(row_depths, target) == depth + 1 ? target : 0;
  }
  const uint32_t len = load_u8(luts + (nl - 1) * kLutRowSize + v);  // spec 3.3: lengths row
  return (len > 8 * depth && len <= 8 * depth + 8 && len >= min_length) ? (len << 8) | v : 0;
}

// Out-of-line part of a lookup: `e` (< 0x100) came from the root row for the 32 bits `top`.
// Follows pointers with the next 8 bits per level (spec 3.3); the table only holds pointers
// one level down, so row depth == level and 4 levels bound the walk. Returns a symbol entry
// (>= 0x100) or 0.
template <typename Table>
DF11_HD uint32_t walk_subtables(const Table& table, uint32_t e, uint32_t top) {
  if (e == 0) return 0;
  // Codes of 9..16 bits (nearly all of the long ones) end one level down.
  e = table(e * kLutRowSize + ((top >> 16) & 0xFF));
  if (e >= 0x100) return e;
  for (uint32_t level = 2; level < kMaxCodeLength / 8; ++level) {
    if (e == 0) return 0;
    e = table(e * kLutRowSize + ((top >> (24 - 8 * level)) & 0xFF));
    if (e >= 0x100) return e;
  }
  return 0;
}

// Second-level speed-up: a table indexed by the next kMultiIndexBits stream bits that decodes
// up to three codes per lookup, derived from the joined table's root row. It is exact for any
// tables, not only canonical ones, because every code is still looked up with exactly the 8
// bits the published procedure uses: a code starting at bit c <= kMultiIndexBits - 8 of the
// index has its 8 bits inside it. So a second code is decoded when the first has at most 4
// bits, a third when the first two have at most 4 together. Entry layout:
//   bits 0-7, 8-15, 16-23: the exponents; 24-29: bits consumed by the n codes (1..12);
//   30-31: n = codes decoded (1..3).
// The top byte, advance + 64 n, is what decode_window() adds to its cursor (bit position in
// bits 0-5, codes in bits 6 and up) in one instruction. A first code of 9 to 12 bits is
// decoded alone when the index decides it (see multi_entry()); any other index whose first
// code is not a root symbol (a longer code, or an unusable entry) holds kMultiEscape: no
// codes, an advance of 32 that ends decode_window's inner loop, which then walks the joined
// table.
// Codes decoded from one index start in its first 4 bits, so decoding with this table while
// pos < kBitsPerWindow - 4 never takes a code that starts in the next window.
inline constexpr uint32_t kMultiIndexBits = 12;
inline constexpr uint32_t kMultiEntries = 1u << kMultiIndexBits;  // 4096 (16 KiB)
inline constexpr uint32_t kMultiReach = kMultiIndexBits - 8;      // 4: starts of later codes
inline constexpr uint32_t kMultiEscape = 32u << 24;

template <typename Table>
DF11_HD uint32_t multi_entry(const Table& table, uint32_t i) {
  uint32_t symbols = 0, n = 0, used = 0;
  while (n < 3 && used <= kMultiReach) {
    const uint32_t e = table((i >> (kMultiReach - used)) & 0xFF);  // root row
    if (e < 0x100) break;
    symbols |= (e & 0xFF) << (8 * n);
    used += e >> 8;
    ++n;
  }
  if (n != 0) return symbols | (used << 24) | (n << 30);
  // The first code is longer than 8 bits (or unusable). Decoding it needs the 8 bits after
  // its first 8 (spec 3.3), of which the index holds only 4; when the table gives the same
  // symbol of at most 12 bits for all 16 values of the other 4, the index decides it alone
  // and the entry is what walk_subtables() would find, for any tables. Otherwise: escape.
  const uint32_t root = table(i >> kMultiReach);
  uint32_t j = 0;
  for (uint32_t rest = 0; rest < 16; ++rest) {
    const uint32_t top = (i << (32 - kMultiIndexBits)) | (rest << (28 - kMultiIndexBits));
    const uint32_t k = walk_subtables(table, root, top);
    if (k == 0 || (k >> 8) > kMultiIndexBits || (rest != 0 && k != j)) return kMultiEscape;
    j = k;
  }
  return (j & 0xFF) | ((j >> 8) << 24) | (1u << 30);
}

// ---- one window ----

// The 96 stream bits of window w's 12 bytes [8w, 8w + 12) as three MSB-first words; bytes
// at and past n_bytes read as zero. `w` counts windows from the group's start.
DF11_HD void load_window(const KernelGroup& g, uint64_t w, uint32_t& w0, uint32_t& w1,
                         uint32_t& w2) {
  const uint64_t byte = w * kBytesPerWindow;
  if ((g.flags & kStreamAligned8) && byte + 12 <= g.n_bytes) {
    uint32_t a, b;
    load_u64(g.stream + byte, a, b);
    w0 = swap_bytes(a);
    w1 = swap_bytes(b);
    w2 = swap_bytes(load_u32(g.stream + byte + 8));
    return;
  }
  uint32_t words[3] = {0, 0, 0};
  for (uint32_t k = 0; k < 12; ++k) {
    const uint32_t v = byte + k < g.n_bytes ? load_u8(g.stream + byte + k) : 0u;
    words[k / 4] |= v << (24 - 8 * (k % 4));
  }
  w0 = words[0];
  w1 = words[1];
  w2 = words[2];
}

// The three bytes holding gap fields w and w + 1 (spec 3.5: 5 bits each, MSB-first), loaded
// apart from their decoding so that a prefetch does not wait for them; past the array: 0.
struct GapBytes {
  uint32_t b0, b1, b2;
};
DF11_HD GapBytes load_gap_bytes(const KernelGroup& g, uint64_t w) {
  const uint64_t byte = w * kGapBits / 8;
  GapBytes r;
  r.b0 = byte < g.gap_bytes ? load_u8(g.gaps + byte) : 0u;
  r.b1 = byte + 1 < g.gap_bytes ? load_u8(g.gaps + byte + 1) : 0u;
  r.b2 = byte + 2 < g.gap_bytes ? load_u8(g.gaps + byte + 2) : 0u;
  return r;
}
DF11_HD void gap_pair(const GapBytes& bytes, uint64_t w, uint32_t& gap, uint32_t& next) {
  const uint32_t v = (bytes.b0 << 16) | (bytes.b1 << 8) | bytes.b2;
  const uint32_t s = static_cast<uint32_t>(w * kGapBits % 8);
  gap = (v >> (19 - s)) & 0x1F;
  next = (v >> (14 - s)) & 0x1F;
}

// Output position b (spec 3.6), or n_elements for b past the array.
DF11_HD uint32_t load_output_position(const KernelGroup& g, uint64_t b) {
  if (b > g.n_blocks) return g.n_elements;
  const uint8_t* p = g.output_positions + 4 * b;
  if (g.flags & kOpAligned4) return load_u32(p);
  return uint32_t{load_u8(p)} | (uint32_t{load_u8(p + 1)} << 8) | (uint32_t{load_u8(p + 2)} << 16) |
         (uint32_t{load_u8(p + 3)} << 24);
}

// What a thread needs from device memory for one window, loaded one block ahead.
struct WindowInputs {
  uint32_t w0, w1, w2;  // window bits
  uint32_t gap, gap_next;
  uint32_t op0, op1, op2;  // output positions b, b + 1, b + 2 (block-uniform)
};

DF11_HD WindowInputs load_window_inputs(const KernelGroup& g, uint32_t block, uint32_t t) {
  WindowInputs in;
  const uint64_t w = uint64_t{block} * kWindowsPerBlock + t;
  load_window(g, w, in.w0, in.w1, in.w2);
  gap_pair(load_gap_bytes(g, w), w, in.gap, in.gap_next);
  in.op0 = load_output_position(g, block);
  in.op1 = load_output_position(g, uint64_t{block} + 1);
  in.op2 = load_output_position(g, uint64_t{block} + 2);
  return in;
}

// The 32 stream bits starting `pos` (0..63) bits into the window.
DF11_HD uint32_t bits_at(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t pos) {
  const bool low = pos < 32;
  return funnel_left(low ? w1 : w2, low ? w0 : w1, pos);  // the shift is taken mod 32
}

inline constexpr uint32_t kMaxCodesPerWindow = kBitsPerWindow;  // codes are >= 1 bit
inline constexpr uint32_t kExponentWords = kMaxCodesPerWindow / 4;
inline constexpr uint32_t kBadEnd = 0xFFFFFFFFu;

// Bytes of one thread's exponent slot when every code has at least `min_length` bits (1..8):
// at most n = 63 / L + 1 codes start in a window; decode_window()'s lookup after c codes
// writes bytes c .. c + 2 (c <= 63 / L, so below n + 2), and scatter_exponents() reads up
// to the word holding byte n + 2 - 1. An odd number of words spreads the 512 slots over all
// 32 banks. 68 bytes for L = 1, 36 for L = 2.
DF11_HD constexpr uint32_t slot_stride_for(uint32_t min_length) {
  const uint32_t l = min_length < 1 ? 1 : (min_length > 8 ? 8 : min_length);
  const uint32_t codes = (kBitsPerWindow - 1) / l + 1;
  return 4 * (((codes + 2) / 4 + 1) | 1);
}

// What a launch's shared memory holds beside the fixed tables (decode_pipeline.cuh), the
// same for every group of the launch (decode_plan.cpp fills it from the plan's groups).
struct SharedLayout {
  uint32_t staging_bytes;    // one staging buffer (staging_bytes_for the largest block)
  uint32_t slot_stride;      // slot_stride_for(min_code_length)
  uint32_t table_rows;       // joined-table rows staged: the largest n_luts - 1 (1..17)
  uint32_t min_code_length;  // table_entry() marks shorter symbols unusable
};

struct WindowResult {
  uint32_t count;  // codes starting in the window (decoding stops at the first bad entry)
  uint32_t end;    // bit after the last decoded code, relative to the window; kBadEnd if a
                   // lookup found no symbol
};

// Decodes every code that starts in the window (spec 4.3), from bit `gap`: exponent j goes
// to store_byte(slot + j, v), which stores the low 8 bits of v (j < 64; bytes up to
// slot + 63 may be written past the count); the caller's `slot` is an address or an index.
// `multi` is the multi-code table, `table` the joined table. The last 4 bits of the window
// are decoded one code at a time, so that no code of the next window is taken.
//
// The loop is shaped for the GPU (13 SASS instructions per multi lookup; see
// decoder/cuda/NOTES.md). One cursor x holds the bit position in bits 0-5 and
// the codes decoded so far from bit 6 up, so that a lookup advances both with one add of the
// entry's top byte. The window is decoded in three phases, each reading its 32 bits with one funnel
// shift of two words (whose amount is taken mod 32) and leaving when bit 5 of x is set:
//   1. positions 0..31 from words (w0, w1), x = pos;
//   2. positions 32..59 from the window's bits 28.. , x = pos - 28;
//   3. positions 60..63 (the tail, one code per lookup) from (w1, w2), x = pos - 32.
// The multi table's escape entry adds 32 to the position, so it leaves the inner loop too;
// the slow path (the joined table) runs only then, outside the inner loop. A position never
// passes 63 within a phase (< 32 + 32), so it never carries into the code count.
template <typename Multi, typename Table, typename StoreByte>
DF11_HD WindowResult decode_window(const Multi& multi, const Table& table, uint32_t w0, uint32_t w1,
                                   uint32_t w2, uint32_t gap, uint32_t slot,
                                   const StoreByte& store_byte) {
  constexpr uint32_t kPhase = 32;  // bit 5 of x: the phase is over
  // Multi-code lookups from x's position while it is below 32; false on an unusable code.
  const auto multi_phase = [&](uint32_t& x, uint32_t first, uint32_t next) {
    while ((x & kPhase) == 0) {
      uint32_t e, top;
      do {
        top = funnel_left(next, first, x);  // the 32 bits from x's position
        e = multi(top >> (32 - kMultiIndexBits));
        const uint32_t at = slot + (x >> 6);
        store_byte(at, e);  // n <= 3 codes; bytes past n are rewritten or ignored
        store_byte(at + 1, e >> 8);
        store_byte(at + 2, e >> 16);
        x += e >> 24;  // advance + 64 n (escape: + 32)
      } while ((x & kPhase) == 0);
      if (e != kMultiEscape) return true;
      x -= 32;  // the escape's advance; the code at x is longer than 8 bits (or unusable)
      const uint32_t j = walk_subtables(table, table(top >> 24), top);
      if (j == 0) return false;
      store_byte(slot + (x >> 6), j);
      x += (j >> 8) + 64;
    }
    return true;
  };
  uint32_t x = gap;  // phase 1: gap < 32
  if (!multi_phase(x, w0, w1)) return WindowResult{x >> 6, kBadEnd};
  x -= 28;  // phase 2: the position was >= 32
  if (!multi_phase(x, funnel_left(w1, w0, 28), funnel_left(w2, w1, 28))) {
    return WindowResult{x >> 6, kBadEnd};
  }
  x -= 4;  // phase 3: position - 32, at least 28
  while ((x & kPhase) == 0) {
    const uint32_t top = funnel_left(w2, w1, x);
    uint32_t e = table(top >> 24);
    if (e < 0x100) {
      e = walk_subtables(table, e, top);
      if (e == 0) return WindowResult{x >> 6, kBadEnd};
    }
    store_byte(slot + (x >> 6), e);
    x += (e >> 8) + 64;
  }
  return WindowResult{x >> 6, (x & 63) + 32};
}

// Bit (relative to the window) where the first `limit` codes of the window end, or kBadEnd.
// Used once per group, for the stream-end check of the last code.
template <typename Table>
DF11_HD uint32_t window_end_after(const Table& table, uint32_t w0, uint32_t w1, uint32_t w2,
                                  uint32_t gap, uint32_t limit) {
  uint32_t pos = gap;
  for (uint32_t j = 0; j < limit; ++j) {
    if (pos >= kBitsPerWindow) return kBadEnd;
    const uint32_t top = bits_at(w0, w1, w2, pos);
    uint32_t e = table(top >> 24);
    if (e < 0x100) e = walk_subtables(table, e, top);
    if (e == 0) return kBadEnd;
    pos += e >> 8;
  }
  return pos;
}

// ---- checks once the block's prefix sums are known (spec 4.3; decoder/cuda/NOTES.md) ----

struct BlockFacts {
  uint32_t block;  // within the group
  uint32_t n_blocks;
  uint32_t expected;       // E = op[b + 1] - op[b] (clamped)
  uint32_t next_expected;  // weights of block b + 1 (0 past the last block)
  uint32_t total;          // T = sum of counts over the block's 512 windows
};

// Problem seen by thread t (window t of the block) whose codes are [prefix, prefix + count).
// The stream-end check needs the end of one particular code; it is returned through
// `needs_end_check` (the number of real codes in this window) so that the caller can run
// window_end_after() on the one thread concerned.
DF11_HD uint32_t window_problem(const BlockFacts& f, uint32_t t, uint32_t prefix,
                                const WindowResult& r, uint32_t gap, uint32_t gap_next,
                                uint32_t& needs_end_check) {
  needs_end_check = 0;
  const bool last_block = f.block + 1 == f.n_blocks;
  const uint32_t upto = prefix + r.count;
  if (f.block == 0 && t == 0 && gap != 0) return kProblemFirstGap;
  // Does the window after this one hold real codes? Then this window's codes (all real)
  // must end exactly at that window's gap.
  const bool next_real = upto < f.expected || (t + 1 == kWindowsPerBlock && !last_block &&
                                               upto == f.expected && f.next_expected > 0);
  if (next_real) {
    if (r.end == kBadEnd) return kProblemUnusable;
    return r.end == kBitsPerWindow + gap_next ? kProblemNone : kProblemBoundary;
  }
  // This window holds the group's last real code: in the last block, or in the block before
  // an empty last block.
  const bool holds_last = prefix < f.expected && upto >= f.expected &&
                          (last_block || (f.block + 2 == f.n_blocks && f.next_expected == 0));
  if (holds_last) needs_end_check = f.expected - prefix;
  return kProblemNone;
}

// The group's last real code ends `end` bits into window `window` (of the group): it must end
// in the stream's last byte (spec 3.4: only the last byte holds padding).
DF11_HD uint32_t stream_end_problem(uint32_t end, uint64_t window, uint64_t n_bytes) {
  if (end == kBadEnd) return kProblemUnusable;
  const uint64_t end_bit = window * kBitsPerWindow + end;
  return (end_bit + 7) / 8 == n_bytes ? kProblemNone : kProblemStreamEnd;
}

// Count rule: every block but the last decodes exactly E codes; the last one may decode more,
// because the zero padding after the stream's last code can look like codes.
DF11_HD bool count_ok(const BlockFacts& f) {
  return f.block + 1 == f.n_blocks ? f.total >= f.expected : f.total == f.expected;
}

// ---- staging exponents and joining them with sign_mantissa ----

// Weights per output step (16 bytes of BF16). The exponent of weight g of block b goes to
// staging byte g - (op[b] & ~15): the base is 16-aligned for 16-byte sign_mantissa copies.
inline constexpr uint32_t kOutputUnit = 8;

// Writes `count` exponents (exponent j in byte j % 4 of load_word(j / 4); bytes past count
// are ignored) to buffer bytes [dst, dst + count) of a buffer that holds zeros there: whole
// words with store32(word, v), and the two words at the ends, which neighbouring threads
// share, with or32(word, v) carrying only this thread's bytes (an atomic OR on the device).
template <typename LoadWord, typename Store32, typename Or32>
DF11_HD void scatter_exponents(const LoadWord& load_word, uint32_t dst, uint32_t count,
                               const Store32& store32, const Or32& or32) {
  if (count == 0) return;
  const uint32_t a = dst % 4;
  const uint32_t end = a + count;       // one past my last byte, counted from word dst / 4
  const uint32_t last = (end - 1) / 4;  // last destination word touched (0..16)
  const uint32_t word0 = dst / 4;
  const uint32_t shift = 8 * a;
  const auto low_bytes = [](uint32_t n) { return n >= 4 ? 0xFFFFFFFFu : (1u << (8 * n)) - 1; };
  // Destination word q holds my bytes 4q - a .. 4q - a + 3: the top a bytes of source word
  // q - 1 and the low 4 - a bytes of source word q (word -1 reads as 0).
  uint32_t cur = load_word(0);
  const uint32_t first = funnel_left(0u, cur, shift);
  if (last == 0) {
    or32(word0, first & low_bytes(end));
    return;
  }
  or32(word0, first);
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
  for (uint32_t q = 1; q < last; ++q) {
    const uint32_t prev = cur;
    cur = load_word(q);
    store32(word0 + q, funnel_left(prev, cur, shift));
  }
  const uint32_t tail = funnel_left(cur, last < kExponentWords ? load_word(last) : 0u, shift);
  or32(word0 + last, tail & low_bytes(end - 4 * last));
}

// spec 2.1: w = ((sm & 0x80) << 8) | (exp << 7) | (sm & 0x7F), four weights at a time:
// sm4 and exp4 hold 4 bytes each; out_lo gets weights 0, 1 and out_hi weights 2, 3.
// Bits of a where mask is set, bits of b elsewhere: one LOP3 on the device.
DF11_HD uint32_t select_bits(uint32_t a, uint32_t b, uint32_t mask) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xE4;" : "=r"(r) : "r"(a), "r"(b), "r"(mask));  // (a&m)|(b&~m)
  return r;
#else
  return (a & mask) | (b & ~mask);
#endif
}

DF11_HD void join4(uint32_t sm4, uint32_t exp4, uint32_t& out_lo, uint32_t& out_hi) {
  const uint32_t high = select_bits(sm4, exp4 >> 1, 0x80808080u);
  const uint32_t low = select_bits(exp4 << 7, sm4, 0x80808080u);
  out_lo = byte_perm(low, high, 0x5140);
  out_hi = byte_perm(low, high, 0x7362);
}

DF11_HD uint16_t join1(uint32_t sm, uint32_t exp) {
  return static_cast<uint16_t>(((sm & 0x80u) << 8) | (exp << 7) | (sm & 0x7Fu));
}

}  // namespace df11::cuda::detail
