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

// ---- The warpgroup kernel (EXEC_KERNEL.md v23, sm_90a) ----
//
// A thread block takes 128 rows of W (8 strips), a chunk of rows of X and a slice of the
// strips' tiles (consecutive whole tiles). The slices of one group and chunk are one cluster
// of thread blocks, whose partial sums are added in slice order. How many slices a matrix has
// depends on its columns only, never on its rows, the batch or the GPU: so neither does the
// order of any output's sums, and a matrix multiplies the same as the matrices its rows are
// split into (q, k and v packed apart, against their BF16 weights concatenated).
inline constexpr uint32_t kExecWgRows = 128;
inline constexpr uint32_t kExecWgMaxSlices = 7;  // within a portable cluster (8)
#ifndef DF11_EXEC_WG_SLICE_TILES
#define DF11_EXEC_WG_SLICE_TILES 4
#endif
inline constexpr uint32_t kExecWgSliceTiles = DF11_EXEC_WG_SLICE_TILES;  // tiles a slice aims at

// Slices of a matrix of `tiles_per_strip` tiles a strip (>= 1): 1..7, about kExecWgSliceTiles
// tiles each (4 slices of 4 tiles at 4096 columns, 7 of 8 at 14336: measured fastest in a
// model's calls, EXEC_KERNEL.md v24).
DF11_HD uint32_t exec_wg_slices(uint32_t tiles_per_strip) {
  const uint32_t s = tiles_per_strip / kExecWgSliceTiles;
  return s < 1 ? 1 : (s > kExecWgMaxSlices ? kExecWgMaxSlices : s);
}

// The tiles [first, end) of slice `slice` of `slices` (as even as integers allow, none empty
// while slices <= tiles).
struct ExecWgSlice {
  uint32_t first = 0, end = 0;
};
DF11_HD ExecWgSlice exec_wg_slice(uint32_t tiles, uint32_t slices, uint32_t slice) {
  return ExecWgSlice{static_cast<uint32_t>(uint64_t{tiles} * slice / slices),
                     static_cast<uint32_t>(uint64_t{tiles} * (slice + 1) / slices)};
}

// Rows of X per chunk (the N of the products: a multiple of 16, the kernel copying X two rows
// at a time in eight core matrices' rows): the batch in as few chunks of at most 128 rows as it
// takes, each rounded up to 96, 112 or 128 rows (the kernels the launcher holds).
#ifndef DF11_EXEC_WG_MAX
#define DF11_EXEC_WG_MAX 128  // the most rows of X the warpgroup kernel takes (112, 128, 256)
#endif
inline constexpr uint32_t kExecWgMaxChunk = DF11_EXEC_WG_MAX;
#ifndef DF11_EXEC_WG_FROM
#define DF11_EXEC_WG_FROM 65  // the fewest rows of X the warpgroup kernel takes (33 or 65)
#endif
DF11_HD uint32_t exec_wg_chunk_rows(uint32_t batch) {
  if (DF11_EXEC_WG_FROM <= 64 && batch <= 64) return batch <= 48 ? 48 : 64;
  const uint32_t chunks = batch == 0 ? 1 : (batch + kExecWgMaxChunk - 1) / kExecWgMaxChunk;
  const uint32_t per = (batch + chunks - 1) / chunks;
  return per <= 96 ? 96 : (per <= 112 ? 112 : (per <= 128 ? 128 : kExecWgMaxChunk));
}

// The batches the warpgroup kernel serves where it is built (sm_90a): those it was measured
// faster at than the cluster kernel (EXEC_KERNEL.md v23-v26), 65-256 rows of X: one chunk up
// to 128 rows (96 rows up to 96, 112 up to 112, else 128), two chunks of 96, 112 or 128 rows
// above (each chunk's blocks decode their weights apart).
#ifndef DF11_EXEC_WG_UPTO
#define DF11_EXEC_WG_UPTO 256  // the most rows it takes, in chunks of at most DF11_EXEC_WG_MAX
#endif
DF11_HD bool exec_wg_takes(uint32_t batch) {
  return batch >= DF11_EXEC_WG_FROM && batch <= DF11_EXEC_WG_UPTO;
}

// Thread blocks of one matrix: groups x chunks x slices (block = (group x chunks + chunk) x
// slices + slice, so that a cluster is consecutive blocks).
DF11_HD uint64_t exec_wg_blocks(uint32_t rows, uint32_t tiles_per_strip, uint32_t batch) {
  const uint32_t groups = (rows + kExecWgRows - 1) / kExecWgRows;
  const uint32_t chunk = exec_wg_chunk_rows(batch);
  return uint64_t{groups} * ((batch + chunk - 1) / chunk) * exec_wg_slices(tiles_per_strip);
}

}  // namespace df11::cuda::detail
