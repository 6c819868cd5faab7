// The bitstream writer (spec 3.4-3.6). Each chunk knows from the plan the bit at which its
// first code starts, so chunks are independent: a chunk codes into a private buffer aligned
// like the output, then merges it (bit_merge.h). Gap fields and output positions only depend
// on where codes start, which the writer tracks as it goes.
#include "chunk_encoder.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "bit_merge.h"

namespace df11 {
namespace {

// Weights per pass: the sign/mantissa loop writes 16 KiB of exponent bytes that the code
// loop then reads while they are still in L1. Larger passes than 4096 weights spend less of
// the loop on the pass's set-up; 16 KiB still fits L1 beside the code tables (encoder_bench
// measures it).
constexpr uint64_t kPassWeights = 16384;
// Weights between checks that the writer is still inside its planned bytes; the scratch
// buffer has room for one such run past the plan (4 bytes each) plus one 8-byte store.
constexpr uint64_t kCheckWeights = 1024;
constexpr uint64_t kScratchSlack = kCheckWeights * 4 + 16;

inline uint32_t exponent_of(uint16_t w) { return (w >> 7) & 0xFF; }

// spec 2.1: sign_mantissa byte = sign in bit 7, the 7 mantissa bits below.
inline uint8_t sign_mantissa_of(uint16_t w) {
  return static_cast<uint8_t>(((w >> 8) & 0x80) | (w & 0x7F));
}

// The key of EncodeTables' pair tables for the exponents p[0], p[1].
inline uint32_t exponent_pair(const uint8_t* p) { return uint32_t{p[0]} | (uint32_t{p[1]} << 8); }

inline void store_be64(uint8_t* p, uint64_t v) {
  v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}

// 5-bit gap fields (spec 3.5) of consecutive windows, packed MSB-first into a private buffer
// aligned like the gaps array.
class GapWriter {
 public:
  explicit GapWriter(uint8_t* buffer) : p_(buffer) {}

  // False if `window` does not follow the previous one (cannot happen for codes <= 32 bits).
  bool put(uint64_t window, uint32_t offset) {
    if (!started_) {
      started_ = true;
      first_ = window;
      pending_ = static_cast<uint32_t>((window * kGapBits) % 8);  // other windows' bits: 0
    } else if (window != last_ + 1) {
      return false;
    }
    last_ = window;
    acc_ = (acc_ << kGapBits) | offset;
    pending_ += kGapBits;
    if (pending_ >= 8) {
      pending_ -= 8;
      *p_++ = static_cast<uint8_t>(acc_ >> pending_);
    }
    return true;
  }

  void finish() {
    if (pending_ > 0) *p_++ = static_cast<uint8_t>(acc_ << (8 - pending_));
    pending_ = 0;
  }

  bool started() const { return started_; }
  uint64_t bit_begin() const { return first_ * kGapBits; }
  uint64_t bit_end() const { return (last_ + 1) * kGapBits; }

 private:
  uint8_t* p_;
  uint64_t acc_ = 0;
  uint32_t pending_ = 0;  // bits in acc_ not yet written
  bool started_ = false;
  uint64_t first_ = 0;
  uint64_t last_ = 0;
};

// What happens when a code is the first to start in its window: its gap field, and, when
// the window opens a block, the block's output position (spec 3.6: the index of the first
// weight whose code starts in the block).
class WindowStarts {
 public:
  WindowStarts(uint64_t chunk_bit_end, uint8_t* gap_buffer, const GroupOutput& out,
               ChunkBlocks& blocks)
      : end_(chunk_bit_end), gaps_(gap_buffer), out_(out), blocks_(blocks) {}

  // A code starts at bit `pos` (the previous code started in an earlier window) and is
  // weight `index`.
  void code_starts_window(uint64_t pos, uint64_t index) {
    if (pos >= end_) return;  // the next chunk's first code
    const uint64_t window = pos / kBitsPerWindow;
    if (!gaps_.put(window, static_cast<uint32_t>(pos % kBitsPerWindow))) ok_ = false;
    if (window % kWindowsPerBlock == 0) {
      const uint64_t block = window / kWindowsPerBlock;
      const uint32_t position = static_cast<uint32_t>(index);
      store_le32(out_.output_positions.data() + 4 * block, position);
      if (!blocks_.any) {
        blocks_.any = true;
        blocks_.first_block = block;
        blocks_.first_position = position;
      } else {
        blocks_.max_inner = std::max(blocks_.max_inner, position - blocks_.last_position);
      }
      blocks_.last_block = block;
      blocks_.last_position = position;
    }
  }

  GapWriter& gaps() { return gaps_; }
  bool ok() const { return ok_; }

 private:
  uint64_t end_;
  GapWriter gaps_;
  const GroupOutput& out_;
  ChunkBlocks& blocks_;
  bool ok_ = true;
};

// MSB-first code writer. Invariant between steps: `pending` (0..7) bits at the top of `buf`
// are not yet complete bytes; `p` is where they go. A step packs up to eight codes into one
// word (independently of `buf`, so the lookups overlap), ORs it below the pending bits,
// stores all 8 bytes of `buf` (bytes past the complete ones are rewritten by later stores)
// and advances by the complete bytes. A word holds at most kWordBits bits, so that
// pending + word < 64: eight codes of realistic weights (mostly 2..5 bits) nearly always
// fit, and the store and bookkeeping of a step are shared by all of them; a group of eight
// that does not fit is written as two groups of four, and a group of four that does not
// is written one code per step.
struct CodeWriter {
  uint8_t* p;
  uint64_t buf;
  uint32_t pending;
  uint64_t pos;  // absolute stream bit where the next code starts
  uint32_t bad;  // has kNoCodeStepLength set once a weight had no code
};

// 64 - the up to 7 pending bits - 1: pending + word must stay below 64, since a step
// shifts `buf` by the complete bytes' bits as `pending & 56`, which is 0, not 64, when
// 64 bits are complete (7 pending bits + 57 word bits would repeat stale bytes).
constexpr uint32_t kWordBits = 56;

// A step spans less than one window, so at most one code start in it (or the start right
// after it) is the first of its window: the first one at or past the window boundary after
// the step's start `pos`. The loop only notes such steps, without a branch; this finds the
// code afterwards, re-reading the lengths of the step's weights (at most kStepWeights) from
// their exponents. Code starts only grow, so counting those before the boundary needs no
// data-dependent branch (crossings are as unpredictable as the weights); it may read up to
// kStepWeights exponents past the step, whose starts lie past the boundary and do not count.
constexpr uint64_t kStepWeights = 8;
void window_start_in_step(const uint8_t* exponents, const EncodeTables& t, uint64_t pos,
                          uint64_t index, WindowStarts& starts) {
  const uint64_t boundary = (pos | (kBitsPerWindow - 1)) + 1;
  uint64_t before = 0;  // code ends (= next code starts) before the boundary
  uint64_t first = 0;   // the first code end at or past it
  uint64_t end = pos;
  for (uint64_t k = 0; k < kStepWeights; ++k) {
    const uint64_t previous = end;
    end += t.length[exponents[k]];
    before += end < boundary;
    first = previous < boundary ? end : first;
  }
  starts.code_starts_window(first, index + before + 1);
}

// Codes the weights with exponents ex[0..count), count <= kCheckWeights, weights index.. of
// the stream. Kept out of line: inlined into encode_chunk's loops its dozens of live values
// spill to the stack, and it codes ~7% fewer weights per second (encoder_bench, 1 thread,
// 2-core AMD EPYC). A call per 64 weights did cost: its entry, exit and the window-start
// loop's mispredicted exit; a call per 1024 codes ~7% more weights per second.
[[gnu::noinline]] void code_weights(const uint8_t* ex, uint64_t count, uint64_t index,
                                    const EncodeTables& t, CodeWriter& w, WindowStarts& starts) {
  uint8_t* p = w.p;
  uint64_t buf = w.buf;
  uint32_t pending = w.pending;
  uint64_t pos = w.pos;
  uint32_t bad = w.bad;
  // Steps that cross a window boundary: their start bit and first weight.
  uint64_t crossing_pos[kCheckWeights];
  uint32_t crossing_at[kCheckWeights];
  uint32_t crossings = 0;
  // One step: `word` holds the `bits` (<= kWordBits) bits of the codes from ex[at].
  const auto put = [&](uint64_t word, uint32_t bits, uint64_t at) {
    buf |= word >> pending;
    pending += bits;
    store_be64(p, buf);
    p += pending >> 3;
    buf <<= pending & 56;
    pending &= 7;
    crossing_pos[crossings] = pos;
    crossing_at[crossings] = static_cast<uint32_t>(at);
    crossings += ((pos ^ (pos + bits)) >> 6) != 0;
    pos += bits;
  };
  // Four codes from ex[at], their step lengths summing to `bits`.
  static_assert(kStepWeights == 8, "the loop below packs eight codes per step");
  const auto put4 = [&](uint64_t at, uint32_t bits) {
    const uint32_t e0 = ex[at], e1 = ex[at + 1], e2 = ex[at + 2], e3 = ex[at + 3];
    if (bits <= kWordBits) [[likely]] {
      const uint32_t l0 = t.length[e0], l01 = l0 + t.length[e1], l012 = l01 + t.length[e2];
      put(t.left[e0] | (t.left[e1] >> l0) | (t.left[e2] >> l01) | (t.left[e3] >> l012), bits, at);
      return;
    }
    for (uint64_t k = at; k < at + 4; ++k) {
      bad |= t.step_length[ex[k]];
      put(t.left[ex[k]], t.length[ex[k]], k);
    }
  };
  uint64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    // The exponents in pairs, each pair one lookup of its concatenated codes.
    const uint32_t p01 = exponent_pair(ex + i), p23 = exponent_pair(ex + i + 2);
    const uint32_t p45 = exponent_pair(ex + i + 4), p67 = exponent_pair(ex + i + 6);
    // Step lengths: a missing code makes the sum exceed kWordBits.
    const uint32_t l01 = t.pair_step_length[p01], l23 = t.pair_step_length[p23];
    const uint32_t l45 = t.pair_step_length[p45], l67 = t.pair_step_length[p67];
    const uint32_t l0123 = l01 + l23, l4567 = l45 + l67;
    if (l0123 + l4567 <= kWordBits) [[likely]] {
      // Quads, then the eight: a shallow tree of shifts.
      const uint64_t w0123 = t.pair_left[p01] | (t.pair_left[p23] >> l01);
      const uint64_t w4567 = t.pair_left[p45] | (t.pair_left[p67] >> l45);
      put(w0123 | (w4567 >> l0123), l0123 + l4567, i);
    } else {
      put4(i, l0123);
      put4(i + 4, l4567);
    }
  }
  for (; i < count; ++i) {
    bad |= t.step_length[ex[i]];
    put(t.left[ex[i]], t.length[ex[i]], i);
  }
  for (uint32_t k = 0; k < crossings; ++k) {
    window_start_in_step(ex + crossing_at[k], t, crossing_pos[k], index + crossing_at[k], starts);
  }
  w.p = p;
  w.buf = buf;
  w.pending = pending;
  w.pos = pos;
  w.bad = bad;
}

}  // namespace

Result<EncodeTables> make_encode_tables(const Code& code) {
  EncodeTables t{};
  for (uint32_t s = 0; s < 256; ++s) {
    const uint32_t l = code.length[s];
    if (l > kMaxCodeLength || (l < 32 && (code.bits[s] >> l) != 0)) {
      return Status(ErrorCode::kInvalidArgument,
                    "encode: plan's code for exponent " + std::to_string(s) + " is malformed");
    }
    t.length[s] = static_cast<uint8_t>(l);
    t.step_length[s] = l == 0 ? kNoCodeStepLength : static_cast<uint8_t>(l);
    t.left[s] = l == 0 ? 0 : uint64_t{code.bits[s]} << (64 - l);
  }
  // Only pairs of coded exponents get entries: a few dozen exponents have codes in
  // practice, so the tables cost a 64 KiB fill and a few thousand entries per call, and
  // the code loop's working set is a few KiB of them.
  t.pair_left = std::make_unique_for_overwrite<uint64_t[]>(65536);
  t.pair_step_length = std::make_unique_for_overwrite<uint8_t[]>(65536);
  std::memset(t.pair_step_length.get(), kNoCodePairStepLength, 65536);
  uint32_t coded[256];
  uint32_t n_coded = 0;
  for (uint32_t s = 0; s < 256; ++s) {
    if (t.length[s] != 0) coded[n_coded++] = s;
  }
  for (uint32_t a = 0; a < n_coded; ++a) {
    for (uint32_t b = 0; b < n_coded; ++b) {
      const uint32_t first = coded[a], second = coded[b];
      const uint32_t key = first | (second << 8);
      t.pair_left[key] = t.left[first] | (t.left[second] >> t.length[first]);
      t.pair_step_length[key] = static_cast<uint8_t>(t.length[first] + t.length[second]);
    }
  }
  return t;
}

Status encode_chunk(const MemberStream& stream, const GroupPlan& plan, const EncodeTables& tables,
                    uint64_t chunk, const GroupOutput& out, ChunkScratch& scratch,
                    ChunkBlocks& blocks) {
  const uint64_t n = plan.n_elements;
  const uint64_t w_begin = chunk * plan.chunk_weights;
  const uint64_t w_end = std::min(n, w_begin + plan.chunk_weights);
  const uint64_t bit_begin = plan.chunk_bit_offset[chunk];
  const uint64_t bit_end = plan.chunk_bit_offset[chunk + 1];
  const auto mismatch = [&](const char* what) {
    return Status(ErrorCode::kInvalidArgument,
                  "encode_group_range: chunk " + std::to_string(chunk) + " (weights " +
                      std::to_string(w_begin) + ".." + std::to_string(w_end) + ") " + what +
                      "; were the members changed after plan_group?");
  };

  const uint64_t head = bit_begin % 8;
  const uint64_t planned_bytes = (head + (bit_end - bit_begin) + 7) / 8;
  scratch.codes.resize(planned_bytes + kScratchSlack);
  const uint64_t max_windows = (bit_end - bit_begin) / kBitsPerWindow + 2;
  scratch.gaps.resize(max_windows * kGapBits / 8 + 2);

  WindowStarts starts(bit_end, scratch.gaps.data(), out, blocks);
  CodeWriter w{scratch.codes.data(), 0, static_cast<uint32_t>(head), bit_begin, 0};
  // The chunk's first code opens a window unless the previous code (the previous chunk's
  // last) started in the same window.
  bool opens_window = true;
  if (chunk > 0) {
    const uint32_t prev_length = tables.length[exponent_of(stream.at(w_begin - 1))];
    opens_window = (bit_begin - prev_length) / kBitsPerWindow != bit_begin / kBitsPerWindow;
  }
  if (opens_window) starts.code_starts_window(bit_begin, w_begin);

  const uint8_t* const limit = scratch.codes.data() + planned_bytes;
  bool overran = false;
  // Slack: window_start_in_step reads up to kStepWeights past a step.
  uint8_t exponents[kPassWeights + kStepWeights] = {};
  stream.for_each_piece(w_begin, w_end, [&](const uint16_t* src, uint64_t count, uint64_t at) {
    for (uint64_t done = 0; done < count && !overran; done += kPassWeights) {
      const uint64_t pass = std::min(kPassWeights, count - done);
      uint8_t* sm = out.sign_mantissa.data() + (at + done - out.sign_mantissa_first);
      // Both byte streams in one vectorisable loop; the code loop then indexes its tables
      // with the exponent bytes directly.
      for (uint64_t i = 0; i < pass; ++i) {
        sm[i] = sign_mantissa_of(src[done + i]);
        exponents[i] = static_cast<uint8_t>(exponent_of(src[done + i]));
      }
      for (uint64_t i = 0; i < pass; i += kCheckWeights) {
        if (w.p > limit) {
          overran = true;
          break;
        }
        code_weights(exponents + i, std::min(kCheckWeights, pass - i), at + done + i, tables, w,
                     starts);
      }
    }
  });
  if (overran || w.pos != bit_end) return mismatch("does not code to its planned bits");
  if (w.bad & kNoCodeStepLength) return mismatch("has an exponent the plan's code does not cover");
  if (!starts.ok()) return Status(ErrorCode::kInternal, "encode: gap windows out of order");

  // The window starts on a byte, so bits keep their place within bytes.
  const uint64_t window_bit = 8 * out.encoded_exponent_first;
  merge_bits(out.encoded_exponent, bit_begin - window_bit, bit_end - window_bit,
             scratch.codes.data());
  GapWriter& gaps = starts.gaps();
  gaps.finish();
  if (gaps.started()) merge_bits(out.gaps, gaps.bit_begin(), gaps.bit_end(), scratch.gaps.data());

  if (chunk + 1 == plan.n_chunks()) {
    // spec 3.6: blocks after the one holding the last code start have no code start; their
    // output position (and entry n_blocks) is n.
    const uint32_t last_length = tables.length[exponent_of(stream.at(n - 1))];
    const uint64_t last_block = (bit_end - last_length) / kBitsPerBlock;
    for (uint64_t b = last_block + 1; b <= plan.n_blocks; ++b) {
      store_le32(out.output_positions.data() + 4 * b, static_cast<uint32_t>(n));
    }
  }
  return Status::ok();
}

}  // namespace df11
