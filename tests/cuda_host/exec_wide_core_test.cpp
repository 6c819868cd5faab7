// The wide fused GEMM's division of work (decoder/cuda/host/exec_wide_core.h), run on the host:
// each strip's walk gives every partial sum of spec 6 exactly the tiles, in the order, that warp
// w of the strip kernel takes (w, w + P, ...), and the blocks of a matrix cover every strip and
// every row of the batch exactly once. Runs without a GPU.
#include "exec_wide_core.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace df11 {
namespace {

using namespace cuda::detail;  // exec_wide_core.h: the walk, the shape and the blocks

// The strip kernel's sequences: partial w takes tiles w, w + P, ... (spec 6).
std::vector<std::vector<uint32_t>> strip_kernel_partials(uint32_t tiles, uint32_t partials) {
  std::vector<std::vector<uint32_t>> seq(partials);
  for (uint32_t w = 0; w < partials; ++w) {
    for (uint32_t u = w; u < tiles; u += partials) seq[w].push_back(u);
  }
  return seq;
}

TEST(ExecWideCore, WalkGivesEachPartialTheStripKernelsTiles) {
  for (const uint32_t partials : {1u, 4u, 8u}) {
    for (uint32_t tiles = 1; tiles <= 70; ++tiles) {
      std::vector<std::vector<uint32_t>> got(partials);
      std::vector<uint32_t> ended;  // partials whose end the walk signalled, in order
      ExecWalk at{0, 0};
      uint32_t steps = 0;
      while (at.tile < tiles) {
        ASSERT_LT(at.partial, partials) << tiles;
        EXPECT_EQ(at.tile % partials, at.partial);
        got[at.partial].push_back(at.tile);
        if (exec_walk_ends_partial(at, tiles, partials)) ended.push_back(at.partial);
        at = exec_walk_next(at, tiles, partials);
        ASSERT_LE(++steps, tiles) << "the walk does not end";
      }
      EXPECT_EQ(steps, tiles);
      EXPECT_EQ(got, strip_kernel_partials(tiles, partials)) << tiles << " tiles";
      // Every partial with a tile ends once, in order; the others are the empty ones, last.
      const uint32_t nonempty = tiles < partials ? tiles : partials;
      ASSERT_EQ(ended.size(), nonempty);
      for (uint32_t w = 0; w < nonempty; ++w) EXPECT_EQ(ended[w], w);
      EXPECT_EQ(exec_walk_empty_partials(tiles, partials), partials - nonempty);
    }
  }
}

TEST(ExecWideCore, BlocksCoverEveryStripAndRowOnce) {
  const uint32_t row_counts[] = {1, 15, 16, 17, 128, 129, 1000, 4100};
  const uint32_t batches[] = {1, 7, 8, 9, 32, 33, 64, 65, 100, 128, 200, 255, 256};
  for (const uint32_t strips_per_block : {1u, 4u, 8u}) {
    for (const uint32_t chunk_rows : {32u, 64u, 128u}) {
      for (const uint32_t rows : row_counts) {
        for (const uint32_t batch : batches) {
          const ExecWideShape s = exec_wide_shape(rows, batch, strips_per_block, chunk_rows);
          const uint32_t strips = (rows + 15) / 16;
          std::vector<uint32_t> seen(uint64_t{strips} * batch, 0);
          for (uint32_t b = 0; b < exec_wide_blocks(s); ++b) {
            const ExecWideBlock k = exec_wide_block(s, b, batch, chunk_rows);
            ASSERT_LT(k.first_row, batch);
            ASSERT_GE(k.live_n8, 1u);
            ASSERT_LE(8 * k.live_n8, chunk_rows + 7);
            // The live n8 tiles hold every row of the chunk and at most 7 past the batch.
            const uint32_t last = k.first_row + 8 * k.live_n8;
            EXPECT_LT(last - (batch < last ? batch : last), 8u);
            for (uint32_t st = k.group * strips_per_block;
                 st < strips && st < (k.group + 1) * strips_per_block; ++st) {
              for (uint32_t j = k.first_row; j < batch && j < k.first_row + chunk_rows; ++j) {
                ++seen[uint64_t{st} * batch + j];
              }
            }
          }
          for (uint32_t v : seen) ASSERT_EQ(v, 1u) << rows << " x " << batch;
        }
      }
    }
  }
}

TEST(ExecWideCore, ChunksOfAGroupAreConsecutiveBlocks) {
  const ExecWideShape s = exec_wide_shape(4096, 256, 8, 64);
  EXPECT_EQ(s.groups, 32u);
  EXPECT_EQ(s.chunks, 4u);
  for (uint32_t b = 0; b < exec_wide_blocks(s); ++b) {
    const ExecWideBlock k = exec_wide_block(s, b, 256, 64);
    EXPECT_EQ(k.group, b / 4);
    EXPECT_EQ(k.first_row, 64 * (b % 4));
    EXPECT_EQ(k.live_n8, 8u);
  }
  const ExecWideBlock tail = exec_wide_block(exec_wide_shape(40, 33, 8, 64), 0, 33, 64);
  EXPECT_EQ(tail.group, 0u);
  EXPECT_EQ(tail.live_n8, 5u);
}

TEST(ExecWideCore, SmallChunksOnlyWhereLargeOnesLeaveTheGpuIdle) {
  // 132 multiprocessors, 2 blocks each: a 4096-row matrix at 64 rows of X has 32 blocks.
  EXPECT_EQ(exec_wide_pick_n8(32, 264, 4, 8), 4u);
  EXPECT_EQ(exec_wide_pick_n8(263, 264, 4, 8), 4u);
  EXPECT_EQ(exec_wide_pick_n8(264, 264, 4, 8), 8u);
  EXPECT_EQ(exec_wide_pick_n8(448, 264, 4, 8), 8u);
}

// The warpgroup kernel (EXEC_KERNEL.md v23): a matrix's slices cover its tiles in order, each
// tile once and none empty; their count is 1..7, no more than the tiles, and a function of the
// columns alone (the same at every batch and for any rows), so that every output's order of
// sums is too.
TEST(ExecWideCore, WarpgroupSlicesCoverEveryTileOnceInOrder) {
  for (uint32_t tiles = 1; tiles <= 80; ++tiles) {
    const uint32_t slices = exec_wg_slices(tiles);
    ASSERT_GE(slices, 1u);
    ASSERT_LE(slices, kExecWgMaxSlices);
    ASSERT_LE(slices, tiles);
    uint32_t next = 0;
    for (uint32_t s = 0; s < slices; ++s) {
      const ExecWgSlice sl = exec_wg_slice(tiles, slices, s);
      EXPECT_EQ(sl.first, next) << tiles << " tiles, slice " << s;
      EXPECT_GT(sl.end, sl.first) << tiles << " tiles, slice " << s;
      next = sl.end;
    }
    EXPECT_EQ(next, tiles) << tiles << " tiles";
  }
  // The 8B block's shapes: 4 slices of 4 tiles at 4096 columns, 7 of 8 at 14336 (down_proj).
  EXPECT_EQ(exec_wg_slices(16), 4u);
  EXPECT_EQ(exec_wg_slices(56), 7u);
  EXPECT_EQ(exec_wg_slices(1), 1u);
}

TEST(ExecWideCore, WarpgroupBlocksAreGroupsTimesChunksTimesSlices) {
  for (const uint32_t batch : {33u, 64u, 65u, 97u, 112u, 113u, 128u, 129u, 200u, 225u, 256u}) {
    const uint32_t chunk = exec_wg_chunk_rows(batch);
    EXPECT_EQ(chunk, batch <= 96    ? 96u
                     : batch <= 112 ? 112u
                     : batch <= 128 ? 128u
                     : batch <= 192 ? 96u
                     : batch <= 224 ? 112u
                                    : 128u)
        << batch;
    EXPECT_EQ(chunk % 16, 0u) << batch;
    for (const uint32_t rows : {1u, 100u, 4096u, 14336u}) {
      for (const uint32_t tiles : {1u, 16u, 56u}) {
        const uint64_t groups = (rows + kExecWgRows - 1) / kExecWgRows;
        const uint64_t chunks = (batch + chunk - 1) / chunk;
        EXPECT_EQ(exec_wg_blocks(rows, tiles, batch), groups * chunks * exec_wg_slices(tiles));
        EXPECT_GE(chunks * chunk, batch);  // every row of X is in a chunk
        EXPECT_LT((chunks - 1) * chunk, batch);
      }
    }
  }
}

// The warpgroup kernel serves 65-256 rows of X, where it was measured faster than the cluster
// kernel (EXEC_KERNEL.md v23-v26): one chunk up to 128 rows (96 rows up to 96, 112 up to 112,
// 128 above), two chunks above, each the smallest of 96, 112 and 128 that holds half the
// batch; no batch the strip kernels serve.
TEST(ExecWideCore, WarpgroupKernelTakesSixtyFiveToTwoHundredFiftySixRows) {
  for (uint32_t batch = 1; batch <= 300; ++batch) {
    const bool expected = batch >= 65 && batch <= 256;
    EXPECT_EQ(exec_wg_takes(batch), expected) << batch;
    if (!expected) continue;
    const uint32_t chunk = exec_wg_chunk_rows(batch);
    const uint32_t chunks = (batch + chunk - 1) / chunk;
    EXPECT_EQ(chunks, batch <= 128 ? 1u : 2u) << batch;
    const uint32_t half = (batch + chunks - 1) / chunks;
    EXPECT_EQ(chunk, half <= 96 ? 96u : (half <= 112 ? 112u : 128u)) << batch;
    EXPECT_GE(chunks * chunk, batch) << batch;  // the chunks hold every row of X
  }
}

}  // namespace
}  // namespace df11
