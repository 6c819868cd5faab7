// The division of work of the execution layout's wide fused GEMM (exec_gemm.cu; EXEC_KERNEL.md
// v9), written once for two compilers: the kernel (nvcc) and the host launcher and its CPU
// tests include this file, so the blocks the host counts are the blocks the kernel decodes.
//
// A thread block takes a group of strips (one warp each) and a chunk of the batch (rows of X),
// and every warp walks its strip's tiles in the order of spec 6's partial sums: partial 0 (tiles
// 0, P, 2P, ...), then partial 1 (tiles 1, P + 1, ...), ..., partial P - 1, where P is the
// number of partial sums (kExecGemmPartials, the strip kernel's warps per strip). All warps of a
// block walk the same tile at the same time, so the tile's columns of X are staged once.
#pragma once

#include <cstdint>

#include "decode_core.h"  // DF11_HD
#include "df11/exec_layout.h"

namespace df11::cuda::detail {

// The blocks of one matrix: `groups` groups of strips times `chunks` chunks of the batch. The
// chunks of a group are consecutive blocks, so that they run at the same time and all but the
// first read the group's weights from L2.
struct ExecWideShape {
  uint32_t groups = 0, chunks = 0;
};

// rows >= 1, batch >= 1, strips_per_block >= 1, chunk_rows >= 1 (rows <= Max_Exec_Dim: no
// overflow).
DF11_HD ExecWideShape exec_wide_shape(uint32_t rows, uint32_t batch, uint32_t strips_per_block,
                                      uint32_t chunk_rows) {
  const uint32_t strips = (rows + kExecStripRows - 1) / kExecStripRows;
  return ExecWideShape{(strips + strips_per_block - 1) / strips_per_block,
                       (batch + chunk_rows - 1) / chunk_rows};
}

DF11_HD uint64_t exec_wide_blocks(const ExecWideShape& s) { return uint64_t{s.groups} * s.chunks; }

// The n8 tiles per chunk of a launch: `large`, unless its blocks (`blocks_large`, counted with
// `large`) are fewer than `min_blocks` (the multiprocessors times the blocks each holds): then
// `small`, which gives up to large / small times the blocks (above 8 small rows of X) where
// several chunks still read each weight from DRAM about once (the others from L2).
inline uint32_t exec_wide_pick_n8(uint64_t blocks_large, uint64_t min_blocks, uint32_t small,
                                  uint32_t large) {
  return blocks_large < min_blocks ? small : large;
}

// Block `block` (< exec_wide_blocks) of a matrix: its group, its first row of X and the n8 tiles
// (8 rows of X each) that hold rows of the batch (the last chunk's may be fewer than the chunk's).
struct ExecWideBlock {
  uint32_t group = 0;
  uint32_t first_row = 0;
  uint32_t live_n8 = 0;
};

DF11_HD ExecWideBlock exec_wide_block(const ExecWideShape& s, uint32_t block, uint32_t batch,
                                      uint32_t chunk_rows) {
  const uint32_t chunk = block % s.chunks;
  const uint32_t first = chunk * chunk_rows;
  const uint32_t rows = batch - first < chunk_rows ? batch - first : chunk_rows;
  return ExecWideBlock{block / s.chunks, first, (rows + 7) / 8};
}

// A place in a strip's walk: the tile and the partial sum it belongs to (tile % partials).
struct ExecWalk {
  uint32_t tile = 0, partial = 0;
};

// Whether `at` is the last tile of its partial sum.
DF11_HD bool exec_walk_ends_partial(const ExecWalk& at, uint32_t tiles, uint32_t partials) {
  return at.tile + partials >= tiles;
}

// The tile after `at` in the walk; its tile is >= tiles after the walk's last tile.
DF11_HD ExecWalk exec_walk_next(const ExecWalk& at, uint32_t tiles, uint32_t partials) {
  if (!exec_walk_ends_partial(at, tiles, partials)) return ExecWalk{at.tile + partials, at.partial};
  if (at.partial + 1 >= partials) return ExecWalk{tiles, partials};  // the last partial ended
  return ExecWalk{at.partial + 1, at.partial + 1};  // no tile if partial + 1 >= tiles
}

// Partial sums with no tile (a strip of fewer tiles than partials): each still adds its +0.
DF11_HD uint32_t exec_walk_empty_partials(uint32_t tiles, uint32_t partials) {
  return tiles < partials ? partials - tiles : 0;
}

}  // namespace df11::cuda::detail
