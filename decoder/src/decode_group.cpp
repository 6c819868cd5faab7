// Fast DF11 decoder (spec 4.3): blocks decode independently and in parallel.
//
// Block b's codes start at bit 32768 * b + gap(512 * b) and there are
// output_positions[b + 1] - output_positions[b] of them. Each block is checked as spec 4.3
// says: the gap of every window in which one of its codes starts, its last code starting
// inside the block, and its end meeting the next block's first code (or, for the last block
// with codes, the stream's last byte). The blocks thus chain into one run of n codes from
// bit 0: the reference decoder's output. A block that fails is handed to the reference
// decoder's loop, from the block's first code, to word the error exactly as it would.
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <span>
#include <string>

#include "bf16.h"
#include "code_run.h"
#include "df11/decoder.h"
#include "df11/group.h"
#include "fast_table.h"
#include "parallel_ranges.h"
#include "reference_scan.h"

namespace df11 {
namespace {

std::string str(uint64_t v) { return std::to_string(v); }

// Blocks decode in interleaved pairs; tasks split the work at pair boundaries so that no
// block decodes alone (at half speed) except an odd last one. A pair is ~8 KiB of stream,
// ~2 * 10^4 weights, tens of microseconds; a few pairs per task amortise the scheduling.
constexpr uint64_t kPairsPerTask = 2;

// The caller's GroupInfo is trusted for the LUT walk and the output positions' rules; the
// decoder checks that it describes this group's sizes so that it indexes safely.
Status check_info_matches(const GroupView& g, const GroupInfo& info, const std::string& what) {
  if (info.n_elements != g.n_elements() || info.n_bytes != g.n_bytes() ||
      info.n_blocks != g.n_blocks() || info.n_luts != g.n_luts() || info.n_luts < 2 ||
      info.n_luts > kMaxLutRows || g.luts.size() % kLutRowSize != 0 ||
      g.output_positions.size() != 4 * (info.n_blocks + 1) ||
      g.gaps.size() != gap_bytes_for_blocks(info.n_blocks) || info.n_elements == 0) {
    return Status(ErrorCode::kInvalidArgument,
                  what + ": the GroupInfo passed to decode_group does not describe this group");
  }
  return Status::ok();
}

// One block being decoded: its code run, code-start bitmap and exponents.
struct BlockJob {
  uint64_t b = 0;
  uint64_t lo = 0;  // weights [lo, hi)
  uint64_t hi = 0;
  detail::CodeRun run;
  std::array<uint64_t, detail::kStartWords> starts;
  std::array<uint8_t, kBitsPerBlock> exponents;  // at most one weight per bit (spec 3.6)
};

// Decodes blocks [first_block, last_block] and writes the part of their weights that falls
// in [first, first + out.size()). Reports the failure of the lowest-numbered block.
class BlockDecoder {
 public:
  BlockDecoder(const GroupView& g, const GroupInfo& info, std::span<uint16_t> out, uint64_t first,
               const std::string& what)
      : g_(g),
        info_(info),
        out_(out),
        first_(first),
        what_(what),
        table_(detail::make_fast_table(g, info)) {}

  // Called by the thread that built the decoder, before tasks start, with the blocks
  // [first_block, end_block) that run() numbers in pairs from first_block.
  void publish(uint64_t first_block, uint64_t end_block) {
    first_block_ = first_block;
    end_block_ = end_block;
    published_.store(true, std::memory_order_release);
  }

  // A task: decodes the block pairs [pair_begin, pair_end) (parallel_ranges.h).
  void run(uint64_t pair_begin, uint64_t pair_end) {
    // Pairs with publish(): orders the task after the decoder's construction in a way
    // ThreadSanitizer sees (the system oneTBB's task hand-off is not instrumented).
    if (!published_.load(std::memory_order_acquire)) std::abort();
    decode_blocks(first_block_ + 2 * pair_begin, std::min(end_block_, first_block_ + 2 * pair_end));
  }

  // Blocks decoded so far. The acquire pairs with each task's release, so that the caller's
  // later reads of the output are ordered after the tasks' writes in a way ThreadSanitizer
  // sees (the system oneTBB's own joins are not instrumented).
  uint64_t blocks_done() const { return blocks_done_.load(std::memory_order_acquire); }

  // OK, or the error of the lowest failing block, as the reference decoder words it.
  Status result() const {
    if (failure_.is_ok()) return failure_;
    const uint64_t b = failed_block_;
    const detail::ScanState from{b == 0 ? 0 : b * kBitsPerBlock + gap(b * kWindowsPerBlock), op(b),
                                 b};
    // The reference finds the fault by the first code of block b + 1 (spec 4.3 checks).
    Status s = detail::reference_scan(g_, info_, what_, from, (b + 2) * kBitsPerBlock, {});
    return s.is_ok() ? failure_ : s;
  }

 private:
  void decode_blocks(uint64_t begin, uint64_t end) {
    std::array<BlockJob, 2> jobs;
    for (uint64_t b = begin; b < end;) {
      // Up to two blocks with codes, decoded interleaved.
      uint32_t ready = 0;
      for (; b < end && ready < 2; ++b) {
        Status s = prepare(b, jobs[ready]);
        if (!s.is_ok()) {
          record_failure(b, std::move(s));
        } else if (jobs[ready].hi > jobs[ready].lo) {
          ++ready;
        }
      }
      if (ready == 2) {
        detail::decode_runs(table_, g_.encoded_exponent.data(), info_.n_bytes, jobs[0].run,
                            jobs[1].run);
      } else if (ready == 1) {
        detail::decode_runs(table_, g_.encoded_exponent.data(), info_.n_bytes, jobs[0].run);
      }
      for (uint32_t j = 0; j < ready; ++j) {
        Status s = finish(jobs[j]);
        if (!s.is_ok()) record_failure(jobs[j].b, std::move(s));
      }
    }
    blocks_done_.fetch_add(end - begin, std::memory_order_release);
  }

  uint64_t op(uint64_t b) const { return read_output_position(g_, b); }
  uint32_t gap(uint64_t w) const { return read_gap(g_.gaps, w); }

  Status fail(ErrorCode code, const std::string& message) const {
    return Status(code, what_ + ": " + message);
  }

  // Sets up block b's run; a block without codes is left with hi == lo.
  Status prepare(uint64_t b, BlockJob& job) {
    job.b = b;
    job.lo = op(b);
    job.hi = op(b + 1);
    // Rechecked here (cheap) so that no GroupInfo can make the decoder write out of bounds.
    if (job.hi < job.lo || job.hi - job.lo > kBitsPerBlock || job.hi > info_.n_elements) {
      return fail(ErrorCode::kBadOutputPositions,
                  "output_positions[" + str(b) + "] = " + str(job.lo) + ", output_positions[" +
                      str(b + 1) + "] = " + str(job.hi) + " do not describe a block");
    }
    if (job.hi == job.lo) return Status::ok();  // the last block may hold no code start
    const uint32_t first_gap = gap(b * kWindowsPerBlock);
    // spec 4.3 check 1: the stream's first code starts at bit 0.
    if (b == 0 && first_gap != 0) {
      return fail(ErrorCode::kBadGap, "gaps field 0 = " + str(first_gap) +
                                          ", but the stream's first code starts at bit 0");
    }
    job.starts.fill(0);
    job.run = detail::CodeRun{};
    job.run.base = b * kBitsPerBlock;
    job.run.pos = job.run.base + first_gap;
    job.run.out = job.exponents.data();
    job.run.out_end = job.exponents.data() + (job.hi - job.lo);
    job.run.starts = job.starts.data();
    return Status::ok();
  }

  // spec 4.3 checks 2..6 on a decoded block, then its weights go out.
  Status finish(const BlockJob& job) {
    DF11_RETURN_IF_ERROR(check_window_gaps(job));
    DF11_RETURN_IF_ERROR(check_block_end(job));
    // spec 2.1: join the decoded exponents with their sign_mantissa bytes, for the part of
    // the block that the caller asked for.
    const uint64_t from = std::max(job.lo, first_);
    const uint64_t to = std::min(job.hi, first_ + out_.size());
    const uint8_t* sm = g_.sign_mantissa.data() + from;
    const uint8_t* exponents = job.exponents.data() + (from - job.lo);
    uint16_t* out = out_.data() + (from - first_);
    for (uint64_t j = 0; j < to - from; ++j) out[j] = detail::bf16_from_parts(sm[j], exponents[j]);
    return Status::ok();
  }

  // Check 2: each window of the block (but the first, where the run began) in which a code
  // starts has its first start where its gap says. Starts at or past the stream's end are
  // not codes of a valid stream: check 4 reports them.
  Status check_window_gaps(const BlockJob& job) const {
    const uint64_t stream_end = 8 * info_.n_bytes;
    for (uint64_t w = 1; w < kWindowsPerBlock; ++w) {
      const uint64_t word = job.starts[w];
      if (word == 0) continue;
      const uint32_t first = static_cast<uint32_t>(std::countl_zero(word));
      const uint64_t window = job.b * kWindowsPerBlock + w;
      if (window * kBitsPerWindow + first >= stream_end) break;
      if (gap(window) != first) {
        return fail(ErrorCode::kBadGap, "gaps field " + str(window) + " = " + str(gap(window)) +
                                            ", first code in window starts at bit " + str(first));
      }
    }
    return Status::ok();
  }

  // Checks 3..6: the codes of block b (weights [lo, hi)) all start inside the block and end
  // where the next code starts: at the next block's first code, or in the stream's last
  // byte. The error names the field that disagrees, as the reference decoder would.
  Status check_block_end(const BlockJob& job) const {
    const detail::CodeRun& run = job.run;
    const uint64_t b = job.b;
    const std::string block =
        "block " + str(b) + " (weights " + str(job.lo) + ".." + str(job.hi) + ")";
    const uint64_t block_end = (b + 1) * kBitsPerBlock;
    const uint64_t stream_end = 8 * info_.n_bytes;
    // Starts past the block's end land in the bitmap's spill words.
    const uint64_t past_end = job.starts[kWindowsPerBlock] | job.starts[kWindowsPerBlock + 1];
    if (past_end != 0) {
      return fail(ErrorCode::kBadOutputPositions,
                  block + ": output_positions[" + str(b + 1) + "] = " + str(job.hi) +
                      " counts codes that start past the block's end (bit " + str(block_end) + ")");
    }
    if (!run.ok) {
      if (run.pos >= stream_end) {
        return fail(ErrorCode::kCorruptData,
                    block + ": the stream ends (bit " + str(stream_end) + ") before its codes do");
      }
      return fail(ErrorCode::kCorruptData,
                  block + ": the code at bit " + str(run.pos) + " reaches luts row " +
                      str(run.fault.row) + " index " + str(run.fault.index) + " = " +
                      str(run.fault.entry) + ", an entry no valid code uses");
    }
    if (run.pos > stream_end) {
      return fail(ErrorCode::kCorruptData, block + ": its codes end at bit " + str(run.pos) +
                                               ", past the end of the stream (bit " +
                                               str(stream_end) + ")");
    }
    if (job.hi < info_.n_elements) {  // block b + 1 holds codes (spec 3.8 P4)
      if (run.pos < block_end) {
        return fail(ErrorCode::kBadOutputPositions,
                    block + ": the next code starts at bit " + str(run.pos) +
                        ", inside the block, but output_positions[" + str(b + 1) +
                        "] = " + str(job.hi) + " ends the block's codes before it");
      }
      const uint64_t w = (b + 1) * kWindowsPerBlock;
      if (run.pos != block_end + gap(w)) {
        return fail(ErrorCode::kBadGap, "gaps field " + str(w) + " = " + str(gap(w)) +
                                            ", but the first code in that window starts at bit " +
                                            str(run.pos - block_end) + " (where block " + str(b) +
                                            "'s codes end)");
      }
    } else if ((run.pos + 7) / 8 != info_.n_bytes) {
      return fail(ErrorCode::kCorruptData, block + ": the group's last code ends at bit " +
                                               str(run.pos) + ", but encoded_exponent has " +
                                               str(info_.n_bytes) +
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
  uint64_t first_block_ = 0;  // set by publish()
  uint64_t end_block_ = 0;
  std::atomic<bool> published_{false};
  std::atomic<uint64_t> blocks_done_{0};
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
                    uint64_t first, const GroupInfo* validated, const CpuTeam* team) {
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
                        str(out.size()) + ") are not inside the group's " + str(info.n_elements));
    }
    if (out.empty()) return Status::ok();

    const uint64_t first_block = block_of(group, info.n_blocks, first);
    const uint64_t last_block = block_of(group, info.n_blocks, first + out.size() - 1);
    BlockDecoder decoder(group, info, out, first, what);
    const uint64_t end_block = last_block + 1;
    const uint64_t n_pairs = (end_block - first_block + 1) / 2;
    // Tasks read only the decoder, written before publish(), whose release each task
    // acquires first (run()).
    decoder.publish(first_block, end_block);
    if (team != nullptr) {
      detail::team_ranges(*team, n_pairs, kPairsPerTask, &decoder);
    } else {
      detail::parallel_ranges(n_pairs, kPairsPerTask, &decoder);
    }
    if (decoder.blocks_done() != last_block + 1 - first_block) {
      return Status(ErrorCode::kInternal, what + ": not every block was decoded");
    }
    return decoder.result();
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, what + ": out of memory while decoding");
  }
}

}  // namespace df11
