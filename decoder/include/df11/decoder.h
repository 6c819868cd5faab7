// CPU DF11 decoders (spec/DF11.md section 4).
//
// decode_group_reference(): written for clarity; decodes the stream sequentially from bit 0
// and checks every gap and output position against what it decodes (spec 4.2).
// decode_group(): fast; blocks decode independently from their output positions, in parallel
// on the caller's TBB arena (or a team of the caller's threads: CpuTeam), with the same checks per
// block (spec 4.3): decoding a whole group, it accepts exactly the groups the reference accepts,
// with the same output, and reports the same error. Both validate the group first (validate_group)
// and never read or write out of bounds, whatever the input. Output is raw BF16 bit patterns
// (uint16), one per weight.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "df11/group.h"
#include "df11/status.h"

namespace df11 {

// Decodes all n_elements BF16 patterns into `out` (size must equal n_elements).
// `what` names the group in error messages ("file.safetensors: group 'model.layers.3'").
Status decode_group_reference(const GroupView& group, std::span<uint16_t> out,
                              const std::string& what);

// Fast decode of weights [first, first + out.size()): any range; only the blocks holding it
// are decoded and checked, so a caller can decode a huge group in bounded-memory pieces.
// Checks each decoded block as spec 4.3 says (every window gap in it, its output positions,
// its seam with the next block or the stream's end) and, when a block fails, reports the
// error the reference decoder gives for that block (kBadGap, kBadOutputPositions or
// kCorruptData). `validated`, if given, must be validate_group()'s result for this same
// group (it skips revalidation on repeated calls; a GroupInfo whose sizes do not match is
// kInvalidArgument). Runs on the calling thread's task arena, or on `team` if given;
// thread-safe for concurrent calls with distinct outputs.
struct CpuTeam;
Status decode_group(const GroupView& group, std::span<uint16_t> out, const std::string& what,
                    uint64_t first = 0, const GroupInfo* validated = nullptr,
                    const CpuTeam* team = nullptr);

// A caller's team of threads for decode_group, such as the one its framework runs its own CPU
// kernels on: run(fn, arg, threads, 0) calls fn(arg) once on each of `threads` threads, the
// calling thread among them, and returns when all have returned (the contract of GNU
// OpenMP's GOMP_parallel, which LLVM's and Intel's OpenMP runtimes also export). The decode's
// blocks are then shared out among those threads instead of oneTBB's: where the framework's
// threads stay busy between its kernels (OpenMP's spin after each parallel region), the
// decode uses them instead of competing with them for the cores. A team with no run or fewer
// than 2 threads decodes on the calling thread alone.
struct CpuTeam {
  void (*run)(void (*fn)(void*), void* arg, unsigned threads, unsigned flags) = nullptr;
  unsigned threads = 0;
};

}  // namespace df11
