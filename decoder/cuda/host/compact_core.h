// The compact execution layout's decode to BF16 (spec/EXEC_COMPACT.md), one lane of one tile
// at a time, written once for two compilers: the kernel (compact_kernel.cu, nvcc) and the host
// emulation (compact_emulation.cpp) include this file, so that tests without a GPU run exactly
// the arithmetic the GPU runs. A warp decodes a tile: lane L finds its bit run from the tile's
// first bit, the lane table and an exclusive prefix sum of the deltas (a warp shuffle scan on
// the GPU, a loop on the host), then decodes its 16 slots of each step through the code's
// 4,096-entry table. Every read is clamped to the blob: a corrupt blob gives wrong weights and
// an error flag, never a read outside it.
#pragma once

#include <cstdint>

#include "decode_core.h"  // DF11_HD, load_u8, load_u32
#include "df11/exec_compact.h"

#if defined(__CUDACC__)
#include <cuda_pipeline.h>
#endif

namespace df11::cuda::detail {

// What the kernel needs of one blob (the host fills it from the header it wrote or validated).
struct CompactView {
  const uint8_t* blob;    // device memory: the whole blob (total_bytes)
  const uint32_t* table;  // the decode table (compact_pair_entry), 4,096 entries
  uint16_t* out;          // rows x cols BF16, row-major
  uint64_t stream_words;  // u32 words of the stream part (its bytes / 4)
  uint64_t tile_bits;     // offsets of the parts (CompactGeometry)
  uint64_t lane_tables;
  uint64_t byte_plane;
  uint64_t stream;
  uint64_t steps;  // per strip
  uint64_t tiles_per_strip;
  uint64_t tiles;
  uint32_t rows, cols;
  // A copy of stream words [staged_first, staged_first + staged_count) (the kernels stage a
  // tile's words in shared memory); words outside it are read from the blob.
  const uint32_t* staged;
  uint64_t staged_first, staged_count;
};

// The view of a blob whose header `h` (geometry `g`) the host has read.
inline CompactView compact_view(const CompactGeometry& g, const CompactHeader& h,
                                const uint8_t* blob, const uint32_t* table, uint16_t* out) {
  CompactView v{};
  v.blob = blob;
  v.table = table;
  v.out = out;
  v.stream_words = CompactGeometry::stream_bytes(h.stream_bits) / 4;
  v.tile_bits = g.tile_bits;
  v.lane_tables = g.lane_tables;
  v.byte_plane = g.byte_plane;
  v.stream = g.stream;
  v.steps = g.exec.steps;
  v.tiles_per_strip = g.exec.tiles_per_strip;
  v.tiles = g.exec.tiles;
  v.rows = h.rows;
  v.cols = h.cols;
  return v;
}

// Little-endian u64 from a byte pointer that may not be 8-aligned (the tile offsets are).
DF11_HD uint64_t compact_load_u64(const uint8_t* p) {
  return uint64_t{load_u32(p)} | uint64_t{load_u32(p + 4)} << 32;
}

// 16 bytes from a 16-byte aligned address, as four little-endian words.
DF11_HD void compact_load_16(const uint8_t* p, uint32_t (&out)[4]) {
#if defined(__CUDA_ARCH__)
  const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
  out[0] = v.x;
  out[1] = v.y;
  out[2] = v.z;
  out[3] = v.w;
#else
  for (uint32_t k = 0; k < 4; ++k) out[k] = load_le32(p + 4 * k);
#endif
}

// Eight BF16 weights (four words, low half first) to a 16-byte aligned address.
DF11_HD void compact_store_16(uint16_t* p, const uint32_t (&w)[4]) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
#else
  for (uint32_t k = 0; k < 8; ++k) p[k] = static_cast<uint16_t>(w[k / 2] >> (16 * (k % 2)));
#endif
}

// The decode table the kernels read (kCompactTableEntries u32, compact_decode_table builds it
// from the code's CompactCode::table): indexed by a lane's next 12 bits, it gives two
// codewords at once where both lie within those bits, else the first.
//   bits 0-7: the first exponent; 8-15: the second; 16-19: the first's length; 25:
//   kCompactPairBoth; 26: kCompactPairBad, the bits begin no codeword (then taken as one bit,
//   exponent 0); 27-31: both lengths (the first's alone without kCompactPairBoth), so that one
//   shift gives the bits a lookup takes.
inline constexpr uint32_t kCompactTableEntries = 1u << kCompactMaxCodeBits;
inline constexpr uint32_t kCompactPairBoth = 1u << 25;
inline constexpr uint32_t kCompactPairBad = 1u << 26;
inline constexpr uint32_t kCompactPairLengthShift = 27;

// Entry i of the decode table, from CompactCode::table (`raw`).
DF11_HD uint32_t compact_pair_entry(const uint16_t* raw, uint32_t i) {
  constexpr uint32_t s = kCompactPairLengthShift;
  const uint32_t a = raw[i];
  if (a == 0) return 1u << 16 | 1u << s | kCompactPairBad;
  const uint32_t la = a >> 8;
  const uint32_t b = raw[i >> la];  // the next codeword, if it ends within the 12 bits
  const uint32_t lb = b >> 8;
  if (b == 0 || lb > kCompactMaxCodeBits - la) return (a & 0xFF) | la << 16 | la << s;
  return (a & 0xFF) | (b & 0xFF) << 8 | la << 16 | (la + lb) << s | kCompactPairBoth;
}

// u32 i of `p`, an array in shared memory on the GPU (a warp's staged words): an explicit
// shared load at the array's shared-window address plus 4 i, one multiply-add, where the
// compiler rebuilt the address from the generic pointer at each read. Volatile, so that it
// stays after the barriers and copy waits that make the words visible.
DF11_HD uint32_t compact_shared_u32(const uint32_t* p, uint32_t i) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm volatile("{\n\t.reg .b32 t;\n\tmad.lo.u32 t, %1, 4, %2;\n\tld.shared.u32 %0, [t];\n\t}"
               : "=r"(r)
               : "r"(i), "r"(static_cast<uint32_t>(__cvta_generic_to_shared(p))));
  return r;
#else
  return p[i];
#endif
}

// Decode-table entry `bits` % kCompactTableEntries of `table` (shared memory on the GPU): the
// mask, then one multiply-add into the table's address (written so, where the compiler took
// three instructions: shift, mask, add).
DF11_HD uint32_t compact_table_entry(const uint32_t* table, uint32_t bits) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm volatile(
      "{\n\t.reg .b32 t;\n\tand.b32 t, %1, 4095;\n\tshl.b32 t, t, 2;\n\tadd.u32 t, t, %2;\n\t"
      "ld.shared.u32 %0, [t];\n\t}"
      : "=r"(r)
      : "r"(bits), "r"(static_cast<uint32_t>(__cvta_generic_to_shared(table))));
  return r;
#else
  return table[bits % kCompactTableEntries];
#endif
}

DF11_HD uint32_t compact_word(const CompactView& v, uint64_t k) {
  if (k - v.staged_first < v.staged_count) return v.staged[k - v.staged_first];
  return k < v.stream_words ? load_u32(v.blob + v.stream + 4 * k) : 0;
}

// Stream words a kernel stages per tile at most: those of a tile whose exponents average
// about 6 bits (real weights take under 3), and those read ahead past its last codeword. A
// tile with more bits is decoded from the blob.
inline constexpr uint32_t kCompactStageWords = 800;
// Words of shared memory after each half of a warp's staged words that its lanes may read and
// nobody writes: on the GPU a lane reads its staged words unclamped (compact_with_run_words
// starts it within them), and a tile moves a lane on by at most kExecTileSteps x 8 lookups x
// 24 bits, 48 words, with its window and the words read ahead 3 more.
inline constexpr uint32_t kCompactStagePad = 56;
static_assert(kExecTileSteps * 8 * 24 / 32 + 3 < kCompactStagePad);
// A warp's staged words in shared memory: two halves, each followed by its pad.
inline constexpr uint32_t kCompactStageSpan = kCompactStageWords + 2 * kCompactStagePad;

// Tile t's stream words to stage: [*first, *first + return value), clamped to the stream and
// to kCompactStageWords (the tile offsets may be anything in a corrupt blob). *whole is set
// where that is every word the tile's lanes read, their read-ahead included.
DF11_HD uint32_t compact_stage_range_of(const CompactView& v, uint64_t b0, uint64_t b1,
                                        uint64_t* first, bool* whole) {
  *first = b0 / 32;
  *whole = false;
  if (b0 >= 32 * v.stream_words || b1 < b0) return 0;
  const uint64_t want = (b1 - b0) / 32 + 4;
  const uint64_t left = v.stream_words - b0 / 32;
  const uint64_t n = want < left ? want : left;
  *whole = n <= kCompactStageWords;
  return static_cast<uint32_t>(n < kCompactStageWords ? n : kCompactStageWords);
}
// The same for tile t, whose first bits the blob gives.
DF11_HD uint32_t compact_stage_range(const CompactView& v, uint64_t t, uint64_t* first,
                                     bool* whole) {
  return compact_stage_range_of(v, compact_load_u64(v.blob + v.tile_bits + 8 * t),
                                compact_load_u64(v.blob + v.tile_bits + 8 * (t + 1)), first, whole);
}

// 32 stream bits from bit s % 32 of word lo on, hi being the next word.
DF11_HD uint32_t compact_funnel(uint32_t lo, uint32_t hi, uint32_t s) {
#if defined(__CUDA_ARCH__)
  uint32_t r;  // shf.r.wrap takes the shift modulo 32 itself
  asm("shf.r.wrap.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(lo), "r"(hi), "r"(s));
  return r;
#else
  s %= 32;
  return s == 0 ? lo : (lo >> s) | (hi << (32 - s));
#endif
}

// A lane's place in its bits: bit `pos` of its word source (counted from the source's first
// word), words pos / 32, pos / 32 + 1 and pos / 32 + 2 of it in lo, hi and nx, and the OR of
// the decode-table entries it has read (kCompactPairBad: bits that began no codeword).
struct CompactLane {
  uint32_t pos, lo, hi, nx, flags;
};

template <typename Words>
DF11_HD CompactLane compact_lane_at(const Words& words, uint32_t pos0) {
  return CompactLane{pos0, words(pos0 / 32), words(pos0 / 32 + 1), words(pos0 / 32 + 2), 0};
}

// A lane's 16 exponents of one step, slot j's in byte j % 4 of e[j / 4]: two codewords per
// lookup of `table` (the decode table) where they fit its 12 bits, a second lookup where not.
// words(k) gives the lane's word k. Two codewords (at most 24 bits) move the lane on by at most
// one word; kAhead: the word after lo and hi is kept in nx, and the one after it read as the
// lane moves into hi (one read per word); else the word after lo and hi is read at every
// lookup (more reads, one register fewer). The exponents are the same either way.
template <bool kAhead, typename Words>
DF11_HD void compact_step_exponents(const uint32_t* table, const Words& words, CompactLane& l,
                                    uint32_t (&e)[kExecSlots / 4]) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (uint32_t w = 0; w < kExecSlots / 4; ++w) {
    uint32_t x = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (uint32_t h = 0; h < 2; ++h) {
      const uint32_t next = kAhead ? l.nx : words(l.pos / 32 + 2);
      const uint32_t bits = compact_funnel(l.lo, l.hi, l.pos);
      uint32_t a = compact_table_entry(table, bits);
      if ((a & kCompactPairBoth) == 0) {
        const uint32_t la = (a >> 16) & 0xF;
        const uint32_t b = compact_table_entry(table, bits >> la);
        a = (a & (0xFFu | 0xFu << 16 | kCompactPairBad)) | (b & 0xFF) << 8 |
            (la + ((b >> 16) & 0xF)) << kCompactPairLengthShift | (b & kCompactPairBad);
      }
      const uint32_t np = l.pos + (a >> kCompactPairLengthShift);
      l.flags |= a;
      if ((np ^ l.pos) >= 32) {  // into the next word
        l.lo = l.hi;
        l.hi = next;
        if (kAhead) l.nx = words(np / 32 + 2);
      }
      l.pos = np;
      x = h == 0 ? a : byte_perm(x, a, 0x5410);  // the two exponent pairs' low halves
    }
    e[w] = x;
  }
}

// Tile t's first bit in the stream.
DF11_HD uint64_t compact_tile_first_bit(const CompactView& v, uint64_t t) {
  return compact_load_u64(v.blob + v.tile_bits + 8 * t);
}

// Tile t's lane table: lane_base and lane L's delta.
DF11_HD uint32_t compact_lane_base(const CompactView& v, uint64_t t) {
  const uint8_t* lt = v.blob + v.lane_tables + kCompactLaneTableBytes * t;
  return load_u8(lt) | uint32_t{load_u8(lt + 1)} << 8;
}
DF11_HD uint32_t compact_lane_delta(const CompactView& v, uint64_t t, uint32_t lane) {
  return load_u8(v.blob + v.lane_tables + kCompactLaneTableBytes * t + 2 + lane);
}

// A lane's bits in tile t: from `start` (absolute), `length` of them, and whether they lie
// within the tile's bits (a valid blob's do).
struct CompactRun {
  uint64_t start;
  uint32_t length;
  bool in_tile;
};

// The run of a lane whose bits start `before` bits after the tile's first lane's (lane x
// lane_base + the deltas of the lanes before it).
// A tile's head: its first bit and the next tile's (b0, b1), its lane_base and one lane's delta.
struct CompactTileHead {
  uint64_t b0, b1;
  uint32_t base, delta;
};

DF11_HD CompactRun compact_lane_run_of(const CompactTileHead& h, uint64_t before) {
  CompactRun r;
  r.start = h.b0 + before;
  r.length = h.base + h.delta;
  r.in_tile = r.start >= h.b0 && r.start <= h.b1 && h.b1 - r.start >= r.length;
  return r;
}

DF11_HD CompactRun compact_lane_run(const CompactView& v, uint64_t t, uint32_t lane,
                                    uint64_t before) {
  return compact_lane_run_of(
      CompactTileHead{compact_tile_first_bit(v, t), compact_tile_first_bit(v, t + 1),
                      compact_lane_base(v, t), compact_lane_delta(v, t, lane)},
      before);
}

// Whether a lane that started at bit pos0 of its source and is now at l decoded its run
// cleanly: every window began with codewords, they stayed within its bits, and those lie
// within the tile's.
DF11_HD bool compact_lane_ok(const CompactRun& r, const CompactLane& l, uint32_t pos0) {
  return (l.flags & kCompactPairBad) == 0 && l.pos - pos0 <= r.length && r.in_tile;
}

// The lane's bits read from the blob (or the view's staged words): word k of the source is
// stream word origin + k.
struct CompactBlobWords {
  const CompactView* v;
  uint64_t origin;
  DF11_HD uint32_t operator()(uint32_t k) const { return compact_word(*v, origin + k); }
};

// Decodes lane `lane` of tile t (its run r) into v.out through words(k), starting at bit pos0
// of the source; v.table is the decode table. Returns compact_lane_ok.
template <typename Words>
DF11_HD bool compact_decode_lane(const CompactView& v, uint64_t t, uint32_t lane,
                                 const CompactRun& r, const Words& words, uint32_t pos0) {
  CompactLane l = compact_lane_at(words, pos0);
  const uint64_t strip = t / v.tiles_per_strip;
  const uint64_t first = (t % v.tiles_per_strip) * kExecTileSteps;
  const uint64_t end = first + kExecTileSteps < v.steps ? first + kExecTileSteps : v.steps;
  // Whole rows of 8 weights go out as one 16-byte store where the output allows it.
  const bool wide = v.cols % 8 == 0 && reinterpret_cast<uintptr_t>(v.out) % 16 == 0;
  for (uint64_t q = first; q < end; ++q) {
    uint32_t bytes[kExecSlots / 4];  // the lane's 16 byte-plane bytes (one 16-byte load)
    compact_load_16(
        v.blob + v.byte_plane + ((strip * v.steps + q) * kExecLanes + lane) * kExecSlots, bytes);
    uint32_t e[kExecSlots / 4];
    compact_step_exponents<true>(v.table, words, l, e);
    // Rows 16 strip + lane / 4 (slots 0..7) and + 8 (slots 8..15), columns 32 q + 8 (lane % 4)
    // onward (spec ); pair k's word rebuilt as spec says.
    const uint64_t col0 = q * kExecStepCols + 8 * (lane % 4);
    for (uint32_t half = 0; half < 2; ++half) {
      const uint64_t row = strip * kExecStripRows + lane / 4 + 8 * half;
      uint32_t w[4];  // the row's 8 weights, two per word (low half first)
      for (uint32_t k = 0; k < 4; ++k) {
        const uint32_t j = 8 * half + 2 * k;
        const uint32_t two = (bytes[j / 4] >> (8 * (j % 4))) & 0xFFFF;  // bytes j and j + 1
        const uint32_t two_e = (e[j / 4] >> (8 * (j % 4))) & 0xFFFF;    // exponents j, j + 1
        const uint32_t p =
            (two & 0xFF) | (two_e & 0xFF) << 8 | (two >> 8) << 16 | (two_e >> 8) << 24;
        w[k] = p >> 1 | p << 31;
      }
      if (row >= v.rows) continue;
      uint16_t* out = v.out + row * v.cols;
      if (wide && col0 + 8 <= v.cols) {
        compact_store_16(out + col0, w);
        continue;
      }
      for (uint32_t k = 0; k < 8 && col0 + k < v.cols; ++k) {
        out[col0 + k] = static_cast<uint16_t>(w[k / 2] >> (16 * (k % 2)));
      }
    }
  }
  return compact_lane_ok(r, l, pos0);
}

// The lane's bits from the warp's staged words (shared memory). On the host the reads are
// clamped to them; on the GPU they are not (one instruction fewer a lookup): a lane starts
// within the words (compact_with_run_words) and a tile takes it at most kCompactStagePad - 1
// words past them, into the pad after them that nobody writes. Words past the staged ones only
// ever decode bits past the lane's run, and such a lane is flagged by compact_lane_ok whatever
// it reads, so both give the same exponents for every lane that is not flagged.
struct CompactStagedWords {
  const uint32_t* stage;
  uint32_t last;  // staged words - 1
  DF11_HD uint32_t operator()(uint32_t k) const {
#if defined(__CUDA_ARCH__)
    return compact_shared_u32(stage, k);
#else
    return stage[k < last ? k : last];
#endif
  }
};

// Lane `lane`'s run in tile t and its word source: the staged words where the tile's are all
// staged and the run lies within them, else the blob. Calls body(run, words, pos0).
template <typename Body>
DF11_HD void compact_with_run_words(const CompactView& v, const CompactRun& r, bool staged,
                                    uint64_t first, uint32_t n, const Body& body) {
  if (staged) {
    // A run outside the tile, or starting past the staged words (a valid blob's tile words
    // hold every run), is flagged and decodes from the staged words' start.
    CompactRun run = r;
    run.in_tile = r.in_tile && r.start - 32 * first <= 32 * uint64_t{n};
    const uint64_t rel = run.in_tile ? r.start - 32 * first : 0;
    body(run, CompactStagedWords{v.staged, n - 1}, static_cast<uint32_t>(rel));
  } else {
    body(r, CompactBlobWords{&v, r.start / 32}, static_cast<uint32_t>(r.start % 32));
  }
}

template <typename Body>
DF11_HD void compact_with_lane_words(const CompactView& v, uint64_t t, uint32_t lane,
                                     uint64_t before, bool staged, uint64_t first, uint32_t n,
                                     const Body& body) {
  compact_with_run_words(v, compact_lane_run(v, t, lane, before), staged, first, n, body);
}
#if defined(__CUDACC__)
// The warp stages tile t's stream words in `stage` (kCompactStageWords, shared memory) and
// points v at them; every lane of the warp calls it. Returns whether they are all the words
// the tile's lanes read (then *first is the first one's index and *n their count).
__device__ __forceinline__ bool compact_stage_tile(CompactView& v, uint64_t t, uint32_t lane,
                                                   uint32_t* stage, uint64_t* first, uint32_t* n) {
  __syncwarp();  // the previous tile's reads are done
  v.staged_count = 0;
  bool whole = false;
  *n = compact_stage_range(v, t, first, &whole);
  for (uint32_t k = lane; k < *n; k += 32) stage[k] = compact_word(v, *first + k);
  __syncwarp();
  v.staged = stage;
  v.staged_first = *first;
  v.staged_count = *n;
  return whole && *n > 0;
}

// How many bits lane `lane`'s run starts after the tile's first lane's: lane x lane_base + the
// deltas of the lanes before it (a warp shuffle scan; every lane of the warp calls it).
__device__ __forceinline__ uint64_t compact_lane_before_of(uint32_t base, uint32_t delta,
                                                           uint32_t lane) {
  uint32_t inclusive = delta;  // the deltas' inclusive prefix sum over the warp
#pragma unroll
  for (uint32_t o = 1; o < 32; o <<= 1) {
    const uint32_t m = __shfl_up_sync(0xFFFFFFFFu, inclusive, o);
    if (lane >= o) inclusive += m;
  }
  return uint64_t{lane} * base + (inclusive - delta);
}

__device__ __forceinline__ uint64_t compact_lane_before(const CompactView& v, uint64_t t,
                                                        uint32_t lane) {
  return compact_lane_before_of(compact_lane_base(v, t), compact_lane_delta(v, t, lane), lane);
}

// A tile's head in shared memory (kCompactHeadWords u32 of a warp's): its two tile bits and the
// 40 bytes from its lane table's 4-byte aligned start down, copied by lanes 0-13 of the warp
// with cp.async (the caller commits and waits). A blob's parts lie within it and the lane
// tables are followed by the byte plane, so the copy reads inside the blob.
inline constexpr uint32_t kCompactHeadWords = 14;

__device__ __forceinline__ void compact_head_copy(const CompactView& v, uint64_t t, uint32_t lane,
                                                  uint32_t* slot) {
  if (lane < 4) {
    __pipeline_memcpy_async(slot + lane, v.blob + v.tile_bits + 8 * t + 4 * lane, 4);
  } else if (lane < kCompactHeadWords) {
    const uint64_t at = (v.lane_tables + kCompactLaneTableBytes * t) & ~uint64_t{3};
    __pipeline_memcpy_async(slot + lane, v.blob + at + 4 * (lane - 4), 4);
  }
}

__device__ __forceinline__ CompactTileHead compact_head_read(const CompactView& v, uint64_t t,
                                                             uint32_t lane, const uint32_t* slot) {
  CompactTileHead h;
  h.b0 = uint64_t{slot[0]} | uint64_t{slot[1]} << 32;
  h.b1 = uint64_t{slot[2]} | uint64_t{slot[3]} << 32;
  const uint8_t* lt = reinterpret_cast<const uint8_t*>(slot + 4) +
                      ((v.lane_tables + kCompactLaneTableBytes * t) & 3);
  h.base = lt[0] | uint32_t{lt[1]} << 8;
  h.delta = lt[2 + lane];
  return h;
}

// The warp starts copying the stream words of the tile whose head is h into `stage`
// (`capacity` words) with cp.async, and returns their range (*first, *n) and whether they are
// all the words the tile's lanes read (*whole), as compact_stage_range gives them. The caller
// commits, waits (__pipeline_wait_prior) and synchronises the warp before reading them.
__device__ __forceinline__ void compact_prefetch_words(const CompactView& v,
                                                       const CompactTileHead& h, uint32_t lane,
                                                       uint32_t* stage, uint32_t capacity,
                                                       uint64_t* first, uint32_t* n, bool* whole) {
  const uint32_t want = compact_stage_range_of(v, h.b0, h.b1, first, whole);
  *n = want < capacity ? want : capacity;
  *whole = *whole && want <= capacity;
  const uint8_t* src = v.blob + v.stream + 4 * *first;
  for (uint32_t k = lane; k < *n; k += 32) __pipeline_memcpy_async(stage + k, src + 4 * k, 4);
}

// A warp's walk over tiles t, t + stride, ... < end, each decoded by body(t, run, words, pos0)
// as compact_with_lane_words calls it, with the next tile's stream words copied (cp.async)
// while body runs, into the other half of `stage` (kCompactStageWords); each tile's head is
// read from the blob when its turn comes. Every lane of the warp calls it; v's staged words
// are pointed at each tile's.
__device__ __forceinline__ constexpr uint32_t compact_half_stage() {
  return kCompactStageWords / 2 / 4 * 4;
}
// Where the second half starts (the first half's words and pad before it).
__device__ __forceinline__ constexpr uint32_t compact_half_stride() {
  return compact_half_stage() + kCompactStagePad;
}

template <typename Body>
__device__ __forceinline__ void compact_walk_tiles_words(CompactView& v, uint64_t t, uint64_t end,
                                                         uint64_t stride, uint32_t lane,
                                                         uint32_t* stage, const Body& body) {
  constexpr uint32_t half = compact_half_stage();
  uint64_t first = 0;
  uint32_t n = 0;
  bool whole = false;
  const auto copy = [&](uint64_t tile, uint32_t* to) {
    compact_prefetch_words(
        v,
        CompactTileHead{compact_tile_first_bit(v, tile), compact_tile_first_bit(v, tile + 1), 0, 0},
        lane, to, half, &first, &n, &whole);
    __pipeline_commit();
  };
  if (t < end) copy(t, stage);
  for (uint32_t i = 0; t < end; t += stride, ++i) {
    const uint64_t tile_first = first;
    const uint32_t tile_n = n;
    const bool staged = whole && n > 0;
    if (t + stride < end) {
      copy(t + stride, stage + compact_half_stride() * ((i + 1) % 2));
      __pipeline_wait_prior(1);
    } else {
      __pipeline_wait_prior(0);
    }
    __syncwarp();
    v.staged = stage + compact_half_stride() * (i % 2);
    v.staged_first = tile_first;
    v.staged_count = tile_n;
    compact_with_lane_words(
        v, t, lane, compact_lane_before(v, t, lane), staged, tile_first, tile_n,
        [&](const CompactRun& run, const auto& src, uint32_t pos0) { body(t, run, src, pos0); });
    __syncwarp();  // the tile's words are read before they are reused
  }
}

// The same, with the head of the tile after the next one copied too (into `heads`, two heads),
// so that no load of the blob waits at a tile's start.
template <typename Body>
__device__ __forceinline__ void compact_walk_tiles(CompactView& v, uint64_t t, uint64_t end,
                                                   uint64_t stride, uint32_t lane, uint32_t* stage,
                                                   uint32_t* heads, const Body& body) {
  constexpr uint32_t half = compact_half_stage();
  if (t >= end) return;
  compact_head_copy(v, t, lane, heads);
  if (t + stride < end) compact_head_copy(v, t + stride, lane, heads + kCompactHeadWords);
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncwarp();
  {
    uint64_t first = 0;
    uint32_t n = 0;
    bool whole = false;
    compact_prefetch_words(v, compact_head_read(v, t, lane, heads), lane, stage, half, &first, &n,
                           &whole);
    __pipeline_commit();
  }
  for (uint32_t i = 0; t < end; t += stride, ++i) {
    __pipeline_wait_prior(0);  // this tile's words and the next one's head
    __syncwarp();
    uint32_t* slot = heads + kCompactHeadWords * (i % 2);
    const CompactTileHead h = compact_head_read(v, t, lane, slot);
    uint64_t first = 0;
    bool whole = false;
    uint32_t n = compact_stage_range_of(v, h.b0, h.b1, &first, &whole);
    whole = whole && n <= half;
    n = n < half ? n : half;
    const CompactRun r = compact_lane_run_of(h, compact_lane_before_of(h.base, h.delta, lane));
    if (t + stride < end) {
      uint64_t next_first = 0;
      uint32_t next_n = 0;
      bool next_whole = false;
      compact_prefetch_words(
          v, compact_head_read(v, t + stride, lane, heads + kCompactHeadWords * ((i + 1) % 2)),
          lane, stage + compact_half_stride() * ((i + 1) % 2), half, &next_first, &next_n,
          &next_whole);
      __syncwarp();  // every lane has read this tile's head
      if (t + 2 * stride < end) compact_head_copy(v, t + 2 * stride, lane, slot);
      __pipeline_commit();
    }
    v.staged = stage + compact_half_stride() * (i % 2);
    v.staged_first = first;
    v.staged_count = n;
    compact_with_run_words(
        v, r, whole && n > 0, first, n,
        [&](const CompactRun& run, const auto& src, uint32_t pos0) { body(t, run, src, pos0); });
    __syncwarp();  // the tile's words are read before they are reused
  }
}
#endif

}  // namespace df11::cuda::detail
