// The decode kernel's tail pool on the host: thread blocks take runs of the launch's last
// blocks through one counter (pool_take, decoder/cuda/host/decode_core.h), and the launch's
// last take sets the counter back to 0. Emulated here with the kernel's control flow (static
// range, a take two blocks before each run ends, runs until a take finds the pool empty) and
// every interleaving a seeded scheduler picks between the thread blocks' atomics: every block
// is decoded exactly once, the counter ends at 0, and a replay with the same epoch (a captured
// launch replayed from a CUDA graph) decodes every block again. Runs without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "decode_core.h"

namespace df11 {
namespace {

using cuda::detail::pool_take;
using cuda::detail::PoolTake;

constexpr uint32_t kChunk = 2;  // decode_kernel.cu's kPoolChunk

// One thread block's walk through its blocks, advanced atomic by atomic.
struct ThreadBlock {
  uint32_t b = 0, stop = 0;
  uint32_t pool_next = 0;  // what the take left (shared memory in the kernel)
  uint32_t after = 0;      // the run after the current one (none: total_blocks)
  bool raised = false;     // the first atomicMax is done
  bool took = false;       // the current run's take is done
  bool done = false;
};

struct Launch {
  uint32_t total_blocks = 0, pool_start = 0, grid = 0, epoch = 0;
};

struct Outcome {
  std::vector<uint32_t> decoded;  // times each block was decoded
  bool out_of_range = false;
};

// Runs thread block `tb` through its next atomic (the first atomicMax, or a take with the
// reset's compare-and-swap) or to its end, as decode_blocks() walks: a take at block
// b == stop - 2 (before that block's end), and at a run's last block the next run is the
// take's block when past b, else the walk ends.
void step(ThreadBlock& tb, const Launch& l, unsigned long long& counter, Outcome& out) {
  if (!tb.raised) {
    const unsigned long long floor = static_cast<unsigned long long>(l.epoch) << 32;
    if (counter < floor) counter = floor;
    tb.raised = true;
    return;
  }
  while (true) {
    if (tb.b >= tb.stop) {
      if (tb.after >= l.total_blocks) {
        tb.done = true;
        return;
      }
      const uint32_t from = tb.after;
      tb.stop = from + std::min(kChunk, l.total_blocks - from);
      tb.after = l.total_blocks;
      tb.b = from;
      tb.took = false;
      continue;
    }
    if (tb.b + 2 == tb.stop && !tb.took) {
      const unsigned long long ticket = counter;  // atomicAdd
      counter += kChunk;
      const PoolTake take =
          pool_take(ticket, kChunk, l.epoch, l.pool_start, tb.stop, l.total_blocks, l.grid);
      if (take.reset && counter == ticket + kChunk) counter = 0;  // atomicCAS
      tb.pool_next = take.next;
      tb.took = true;
      return;
    }
    if (tb.b < l.total_blocks) {
      ++out.decoded[tb.b];
    } else {
      out.out_of_range = true;
    }
    if (tb.b + 1 == tb.stop) tb.after = tb.pool_next > tb.b ? tb.pool_next : l.total_blocks;
    ++tb.b;
  }
}

// One launch on `counter`, the thread blocks' atomics interleaved as `seed` picks.
Outcome run(const Launch& l, unsigned long long& counter, uint32_t seed) {
  std::mt19937 rng(seed);
  Outcome out;
  out.decoded.assign(l.total_blocks, 0);
  std::vector<ThreadBlock> tbs(l.grid);
  std::vector<uint32_t> live;
  for (uint32_t i = 0; i < l.grid; ++i) {
    tbs[i].b = static_cast<uint32_t>(uint64_t{i} * l.pool_start / l.grid);
    tbs[i].stop = static_cast<uint32_t>(uint64_t{i + 1} * l.pool_start / l.grid);
    tbs[i].pool_next = l.total_blocks;
    tbs[i].after = l.total_blocks;
    live.push_back(i);
  }
  while (!live.empty()) {
    const size_t pick = std::uniform_int_distribution<size_t>(0, live.size() - 1)(rng);
    step(tbs[live[pick]], l, counter, out);
    if (tbs[live[pick]].done) live.erase(live.begin() + static_cast<std::ptrdiff_t>(pick));
  }
  return out;
}

Launch make_launch(uint32_t total, uint32_t grid, uint32_t pool_blocks, uint32_t epoch) {
  Launch l;
  l.total_blocks = total;
  l.grid = grid;
  l.pool_start = total - pool_blocks;
  l.epoch = epoch;
  return l;
}

void expect_each_once(const Outcome& o, const char* what) {
  EXPECT_FALSE(o.out_of_range) << what;
  for (size_t b = 0; b < o.decoded.size(); ++b) {
    ASSERT_EQ(o.decoded[b], 1u) << what << ": block " << b;
  }
}

TEST(TailPool, EveryBlockOnceAndTheCounterBackToZero) {
  // Shapes as pool_start_for() makes them: 40% of the blocks in runs of 2, every static range
  // at least two blocks.
  for (const auto& [total, grid] : std::vector<std::pair<uint32_t, uint32_t>>{
           {100, 10}, {1000, 132}, {2000, 396}, {57, 4}, {40, 12}}) {
    const uint32_t pool = total * 40 / 100 / kChunk * kChunk;
    ASSERT_GE(total - pool, 2 * grid);
    for (uint32_t seed = 0; seed < 20; ++seed) {
      unsigned long long counter = 0;
      const Outcome o = run(make_launch(total, grid, pool, 7), counter, seed);
      expect_each_once(o, "launch");
      EXPECT_EQ(counter, 0u) << "total " << total << " grid " << grid << " seed " << seed;
    }
  }
}

TEST(TailPool, ReplaysWithTheCaptureEpochDecodeEverything) {
  // A CUDA graph replays the captured launch with its epoch: before the reset, every replay
  // after the first found the pool taken and skipped its blocks.
  const Launch l = make_launch(1000, 132, 400, 42);
  unsigned long long counter = 0;
  for (uint32_t replay = 0; replay < 50; ++replay) {
    const Outcome o = run(l, counter, 1000 + replay);
    expect_each_once(o, "replay");
    ASSERT_EQ(counter, 0u) << "replay " << replay;
  }
}

TEST(TailPool, LaterEpochsAndCountersOfEarlierOnes) {
  // Epochs grow launch by launch; a counter an earlier launch left raised (a workspace from
  // before this fix, or one whose launch was cut short) is smaller, and raised past.
  unsigned long long counter = (uint64_t{5} << 32) | 123;
  for (uint32_t epoch = 6; epoch < 12; ++epoch) {
    const Outcome o = run(make_launch(300, 40, 120, epoch), counter, epoch);
    expect_each_once(o, "epoch");
    EXPECT_EQ(counter, 0u);
  }
}

TEST(TailPool, ACounterOfALaterLaunchIsNeverSkippedNorReset) {
  // Two launches in flight on one workspace (the API forbids it): a take that returns another
  // epoch makes the thread block decode the blocks after its run itself. Blocks may be
  // decoded twice, never skipped, and the other launch's counter is left alone.
  const Launch l = make_launch(300, 40, 120, 3);
  for (uint32_t seed = 0; seed < 10; ++seed) {
    const unsigned long long later = (uint64_t{9} << 32) | 17;
    unsigned long long counter = later;
    const Outcome o = run(l, counter, seed);
    EXPECT_FALSE(o.out_of_range);
    for (size_t b = 0; b < o.decoded.size(); ++b) ASSERT_GE(o.decoded[b], 1u) << "block " << b;
    EXPECT_EQ(counter >> 32, 9u);
    EXPECT_NE(counter, 0u);
  }
}

TEST(TailPool, OnlyTheLastTakeResets) {
  const uint32_t pool = 40, grid = 12, start = 100, total = start + pool;
  const uint64_t e = uint64_t{4} << 32;
  // Successful takes and every failing one but the last do not reset.
  for (uint32_t taken = 0; taken < pool + (grid - 1) * kChunk; taken += kChunk) {
    EXPECT_FALSE(pool_take(e | taken, kChunk, 4, start, 50, total, grid).reset) << taken;
  }
  const PoolTake last =
      pool_take(e | (pool + (grid - 1) * kChunk), kChunk, 4, start, 50, total, grid);
  EXPECT_TRUE(last.reset);
  EXPECT_EQ(last.next, total);
  // Another epoch's counter never resets.
  EXPECT_FALSE(pool_take((uint64_t{5} << 32) | (pool + (grid - 1) * kChunk), kChunk, 4, start, 50,
                         total, grid)
                   .reset);
  // A successful take hands out the pool's next run, never a block behind the walk.
  EXPECT_EQ(pool_take(e | 6, kChunk, 4, start, 50, total, grid).next, start + 6);
  EXPECT_EQ(pool_take(e | 6, kChunk, 4, start, start + 10, total, grid).next, total);
}

}  // namespace
}  // namespace df11
