// Fast DF11 decoder (spec 4.3): blocks decode independently and in parallel.
//
// Block b's codes start at bit 32768 * b + gap(512 * b) and there are
// output_positions[b + 1] - output_positions[b] of them. Each block is checked against its
// neighbour: its last code starts inside the block and ends exactly where the next block's
// first code starts (or, for the last block with codes, in the stream's last byte). Together
// these make the blocks one contiguous run of n codes from bit 0, i.e. the same codes the
// reference decoder finds, without a sequential pass. Gaps of windows other than each
// block's first are not read (decode_group_reference checks them all).
#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <new>
#include <span>
#include <string>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "bf16.h"
#include "decode_run.h"
#include "df11/decoder.h"
#include "df11/group.h"
#include "fast_table.h"

namespace df11 {
namespace {

std::string str(uint64_t v) { return std::to_string(v); }

// Blocks per parallel task: a block is ~4 KiB of stream, ~10^4 weights, tens of microseconds.
constexpr uint64_t kBlocksPerTask = 4;

// The caller's GroupInfo is trusted for the LUT walk and the output positions; the decoder
// only needs it to describe this group's sizes to index safely.
Status check_info_matches(const GroupView& g, const GroupInfo& info, const std::string& what) {
  if (info.n_elements != g.n_elements() || info.n_bytes != g.n_bytes() ||
      info.n_blocks != g.n_blocks() || info.n_luts != g.n_luts() || info.n_luts < 2 ||
      g.luts.size() % kLutRowSize != 0 || g.output_positions.size() != 4 * (info.n_blocks + 1) ||
      g.gaps.size() != gap_bytes_for_blocks(info.n_blocks) || info.n_elements == 0) {
    return Status(ErrorCode::kInvalidArgument,
                  what + ": the GroupInfo passed to decode_group does not describe this group");
  }
  return Status::ok();
}

// Decodes blocks [first_block, last_block] and writes the part of their weights that falls
// in [first, first + out.size()). Reports the failure of the lowest-numbered block.
class BlockDecoder {
 public:
  BlockDecoder(const GroupView& g, const GroupInfo& info, std::span<uint16_t> out,
               uint64_t first, const std::string& what)
      : g_(g), info_(info), out_(out), first_(first), what_(what),
        table_(detail::make_fast_table(g, info)) {}

  void decode_blocks(uint64_t begin, uint64_t end) {
    // One block's exponents: at most one weight per stream bit (spec 3.6).
    std::array<uint8_t, kBitsPerBlock> exponents;
    for (uint64_t b = begin; b < end; ++b) {
      Status s = decode_block(b, exponents.data());
      if (!s.is_ok()) record_failure(b, std::move(s));
    }
  }

  Status result() const { return failure_; }

 private:
  uint64_t op(uint64_t b) const { return read_output_position(g_, b); }

  // Bit where block b's first code starts (spec 4.3).
  uint64_t block_start(uint64_t b) const {
    return b * kBitsPerBlock + read_gap(g_.gaps, b * kWindowsPerBlock);
  }

  Status fail(ErrorCode code, const std::string& message) const {
    return Status(code, what_ + ": " + message);
  }

  Status decode_block(uint64_t b, uint8_t* exponents) {
    const uint64_t lo = op(b);
    const uint64_t hi = op(b + 1);
    // Rechecked here (cheap) so that no GroupInfo can make the decoder write out of bounds.
    if (hi < lo || hi - lo > kBitsPerBlock || hi > info_.n_elements) {
      return fail(ErrorCode::kBadOutputPositions,
                  "output_positions[" + str(b) + "] = " + str(lo) + ", output_positions[" +
                      str(b + 1) + "] = " + str(hi) + " do not describe a block");
    }
    if (hi == lo) return Status::ok();  // the last block may hold no code start
    const uint64_t start = block_start(b);
    if (b == 0 && start != 0) {
      return fail(ErrorCode::kBadGap, "gaps field 0 = " + str(start) +
                                          ", but the stream's first code starts at bit 0");
    }
    const uint32_t count = static_cast<uint32_t>(hi - lo);
    const detail::CodeRun run = detail::decode_run(table_, g_.encoded_exponent.data(),
                                                   info_.n_bytes, start, count, exponents);
    if (!run.ok) {
      return fail(ErrorCode::kCorruptData,
                  "block " + str(b) + ": the code at bit " + str(run.end_bit) +
                      " reaches luts row " + str(run.fault.row) + " index " +
                      str(run.fault.index) + " = " + str(run.fault.entry) +
                      ", an entry no valid code uses");
    }
    DF11_RETURN_IF_ERROR(check_block_end(b, lo, hi, run));

    // spec 2.1: join the decoded exponents with their sign_mantissa bytes, for the part of
    // the block that the caller asked for.
    const uint64_t from = std::max(lo, first_);
    const uint64_t to = std::min(hi, first_ + out_.size());
    const uint8_t* sm = g_.sign_mantissa.data();
    uint16_t* out = out_.data();
    for (uint64_t j = from; j < to; ++j) {
      out[j - first_] = detail::bf16_from_parts(sm[j], exponents[j - lo]);
    }
    return Status::ok();
  }

  // The codes of block b (weights [lo, hi)) must all start inside the block and end where
  // the next code starts: at the next block's first code, or in the stream's last byte.
  Status check_block_end(uint64_t b, uint64_t lo, uint64_t hi, const detail::CodeRun& run) const {
    const std::string block = "block " + str(b) + " (weights " + str(lo) + ".." + str(hi) + ")";
    const uint64_t block_end = (b + 1) * kBitsPerBlock;
    if (run.last_start >= block_end) {
      return fail(ErrorCode::kCorruptData,
                  block + ": its last code starts at bit " + str(run.last_start) +
                      ", past the block's end (bit " + str(block_end) + ")");
    }
    // Validated groups have only the last block empty; a block b + 1 with codes follows.
    const bool next_has_codes = b + 1 < info_.n_blocks && op(b + 2) > op(b + 1);
    if (next_has_codes) {
      const uint64_t next = block_start(b + 1);
      if (run.end_bit != next) {
        return fail(ErrorCode::kCorruptData,
                    block + ": its codes end at bit " + str(run.end_bit) + ", but block " +
                        str(b + 1) + "'s first code starts at bit " + str(next) +
                        " (gaps field " + str((b + 1) * kWindowsPerBlock) + ")");
      }
    } else if ((run.end_bit + 7) / 8 != info_.n_bytes) {
      return fail(ErrorCode::kCorruptData,
                  block + ": the group's last code ends at bit " + str(run.end_bit) +
                      ", but encoded_exponent has " + str(info_.n_bytes) +
                      " bytes (only the last byte may hold padding)");
    }
    return Status::ok();
  }

  void record_failure(uint64_t b, Status s) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (b < failed_block_) {
      failed_block_ = b;
      failure_ = std::move(s);
    }
  }

  const GroupView& g_;
  const GroupInfo& info_;
  std::span<uint16_t> out_;
  const uint64_t first_;
  const std::string& what_;
  const detail::FastTable table_;
  std::mutex mutex_;
  uint64_t failed_block_ = ~0ull;
  Status failure_;
};

// The block holding weight `index` (< n_elements): the last b with op[b] <= index.
uint64_t block_of(const GroupView& g, uint64_t n_blocks, uint64_t index) {
  uint64_t lo = 0, hi = n_blocks;  // answer in [lo, hi)
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (read_output_position(g, mid) <= index) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace

Status decode_group(const GroupView& group, std::span<uint16_t> out, const std::string& what,
                    uint64_t first, const GroupInfo* validated) {
  try {
    GroupInfo local;
    if (validated == nullptr) {
      DF11_ASSIGN_OR_RETURN(local, validate_group(group, what));
      validated = &local;
    } else {
      DF11_RETURN_IF_ERROR(check_info_matches(group, *validated, what));
    }
    const GroupInfo& info = *validated;
    if (first > info.n_elements || out.size() > info.n_elements - first) {
      return Status(ErrorCode::kInvalidArgument,
                    what + ": weights [" + str(first) + ", " + str(first) + " + " +
                        str(out.size()) + ") are not inside the group's " +
                        str(info.n_elements));
    }
    if (out.empty()) return Status::ok();

    const uint64_t first_block = block_of(group, info.n_blocks, first);
    const uint64_t last_block = block_of(group, info.n_blocks, first + out.size() - 1);
    BlockDecoder decoder(group, info, out, first, what);
    tbb::parallel_for(
        tbb::blocked_range<uint64_t>(first_block, last_block + 1, kBlocksPerTask),
        [&](const tbb::blocked_range<uint64_t>& r) { decoder.decode_blocks(r.begin(), r.end()); });
    return decoder.result();
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, what + ": out of memory while decoding");
  }
}

}  // namespace df11
