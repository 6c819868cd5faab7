// Optimal code lengths for a prefix code under DF11's two limits (spec 2.4): a maximum code
// length and the lookup-table shape. build_code() (df11/encoder.h) is the usual entry point;
// these lower-level functions are public so that tests can check them against brute force
// with small, artificial table shapes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "df11/group.h"
#include "df11/status.h"

namespace df11 {

// Shape of the decoder's lookup tables (spec 3.3). Each row is indexed by `index_bits`
// stream bits; a code longer than d * index_bits bits (d >= 1) needs the level-d subtable of
// its (d * index_bits)-bit prefix, and at most `max_subtables` subtables may exist in total.
// DF11 uses {8, kMaxSubtables}.
struct LutShape {
  uint32_t index_bits = 8;
  uint32_t max_subtables = kMaxSubtables;
};

// Largest alphabet the functions below accept (the DP stores node counts in a byte).
inline constexpr uint32_t kMaxCodeLengthsAlphabet = 255;
// Largest sum of weights accepted: costs (weight * length sums) then fit in 64 bits.
inline constexpr uint64_t kMaxCodeLengthsTotalWeight = uint64_t{1} << 58;

// Subtables the canonical code (spec 2.3) with these code lengths needs under `shape`: for
// each level d, the number of distinct (d * index_bits)-bit prefixes of codes longer than
// d * index_bits bits. Lengths of 0 are absent symbols. Requires lengths <= 32 and a Kraft
// sum <= 1. Canonical codes place all codes longer than k bits in one contiguous interval of
// the code space that starts on a 2^-k boundary, so the count is
// ceil(2^k * sum over those codes of 2^-length), the fewest any prefix code with these
// lengths can need.
uint64_t count_subtables(std::span<const uint8_t> lengths, const LutShape& shape);

// Optimal code lengths (minimum sum of weight * length) with every length <= max_length,
// by package-merge (Larmore and Hirschberg 1990). `weights` are all > 0, 2 <= size <=
// kMaxCodeLengthsAlphabet, size <= 2^max_length, max_length <= kMaxCodeLength and the sum
// <= kMaxCodeLengthsTotalWeight; otherwise kInvalidArgument. The result is in the order of
// `weights`, has a Kraft sum of exactly 1 and is deterministic (ties broken by index).
Result<std::vector<uint8_t>> package_merge_lengths(std::span<const uint64_t> weights,
                                                   uint32_t max_length);

// Optimal code lengths under both limits: every length <= max_length AND the canonical code
// needs at most shape.max_subtables subtables. Exact dynamic programming over code trees
// (see encoder/NOTES.md), searched with a cost limit that prunes states which cannot lead to
// an optimum (the result is the unpruned DP's, bit for bit); worst case O(max_length * n^2 *
// max_subtables) time, typically well under a millisecond, and only reached states stored.
// build_code() calls it only when the package-merge code breaks the table limit. Same preconditions
// as package_merge_lengths, plus 1 <= shape.index_bits and shape.max_subtables <= 255; kUncodable
// if no code meets both limits.
Result<std::vector<uint8_t>> lut_limited_lengths(std::span<const uint64_t> weights,
                                                 uint32_t max_length, const LutShape& shape);

}  // namespace df11
