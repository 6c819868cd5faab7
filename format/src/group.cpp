// Structural validation of a DF11 group (spec/DF11.md section 3.8).
//
// Walks only the small arrays (luts, output_positions, split_positions) and checks sizes; it
// never reads the bitstream. What it guarantees is what decoders rely on to index safely:
// every LUT pointer lands on a table row, every decoded symbol has a code length matching its
// depth, and every block's output range lies inside [0, n_elements] with at most one weight
// per stream bit.
#include "df11/group.h"

#include <array>
#include <cstdint>
#include <string>

namespace df11 {
namespace {

// spec 3.6: output positions are uint32, so a group holds at most this many weights
// (Max_Group_Elements).
constexpr uint64_t kMaxGroupElements = UINT32_MAX;

// spec 3.3: a code has at most kMaxCodeLength / 8 = 4 levels: the root (depth 0) and
// subtables at depths 1..3.
constexpr int kMaxLutDepth = static_cast<int>(kMaxCodeLength / 8) - 1;

Status fail(ErrorCode code, const std::string& what, const std::string& message) {
  return Status(code, what + ": " + message);
}

std::string str(uint64_t v) { return std::to_string(v); }

// spec 3.2: sizes of the six tensors agree with one another.
Status check_sizes(const GroupView& g, const std::string& what) {
  const uint64_t n = g.n_elements();
  const uint64_t n_bytes = g.n_bytes();
  if (n == 0) {
    // A group with no weights has no stream, no blocks and nothing to decode; the compressor
    // stores empty tensors unchanged instead (spec 3.8).
    return fail(ErrorCode::kBadGroup, what,
                "sign_mantissa is empty: a group holds at least 1 weight");
  }
  if (n > kMaxGroupElements) {
    return fail(ErrorCode::kBadGroup, what,
                "sign_mantissa has " + str(n) + " weights, more than Max_Group_Elements = " +
                    str(kMaxGroupElements) + " (output positions are uint32)");
  }
  // spec 3.4: every code is at least 1 bit, so n weights need at least ceil(n / 8) bytes.
  if ((n + 7) / 8 > n_bytes) {
    return fail(ErrorCode::kBadGroup, what,
                "encoded_exponent has " + str(n_bytes) + " bytes, too few for " + str(n) +
                    " weights (a code is at least 1 bit: at least " + str((n + 7) / 8) + " bytes)");
  }
  const uint64_t n_blocks = g.n_blocks();
  if (g.output_positions.size() != 4 * (n_blocks + 1)) {
    return fail(ErrorCode::kBadGroup, what,
                "output_positions has " + str(g.output_positions.size()) +
                    " bytes, expected 4 * (n_blocks + 1) = " + str(4 * (n_blocks + 1)) + " for " +
                    str(n_blocks) + " blocks of encoded_exponent (" + str(n_bytes) + " bytes)");
  }
  // ceil(5 * 512 * n_blocks / 8): identical to what the official encoder writes
  // (np.packbits of 5 bits per window).
  if (g.gaps.size() != gap_bytes_for_blocks(n_blocks)) {
    return fail(ErrorCode::kBadGroup, what,
                "gaps has " + str(g.gaps.size()) +
                    " bytes, expected ceil(5 * 512 * n_blocks / 8) = " +
                    str(gap_bytes_for_blocks(n_blocks)) + " for " + str(n_blocks) + " blocks");
  }
  if (g.split_positions.size() % 8 != 0) {
    return fail(ErrorCode::kBadGroup, what,
                "split_positions has " + str(g.split_positions.size()) +
                    " bytes, not a whole number of int64 values");
  }
  return Status::ok();
}

// spec 3.3: walks the lookup tables from the root, breadth first, so that each reachable row
// gets its depth: the fewest pointer steps from the root. Every pointer in a reachable row
// must name a table row (kBadLut). An entry is usable if it leads exactly one level down or
// decodes a symbol whose length fits its depth (8d+1 .. 8d+8 bits). Other entries are only
// counted, not rejected: no valid stream reaches them, and valid groups have them: an
// incomplete code (one symbol: a 1-bit code) leaves root entries without a symbol, and the
// official encoder fills the entries of its EOF code with a copy of the entry before.
Status check_luts(const GroupView& g, const std::string& what, GroupInfo& info) {
  if (g.luts.size() % kLutRowSize != 0) {
    return fail(ErrorCode::kBadLut, what,
                "luts has " + str(g.luts.size()) + " bytes, not a whole number of 256-byte rows");
  }
  const uint64_t n_rows = g.luts.size() / kLutRowSize;
  if (n_rows < 2 || n_rows > kMaxLutRows) {
    return fail(ErrorCode::kBadLut, what,
                "luts has " + str(n_rows) + " rows, expected 2.." + str(kMaxLutRows) +
                    " (root, up to " + str(kMaxSubtables) + " subtables, code lengths)");
  }
  const uint32_t lengths_row = static_cast<uint32_t>(n_rows) - 1;
  const uint8_t* lengths = g.luts.data() + uint64_t{lengths_row} * kLutRowSize;

  int8_t* depth = info.lut_row_depth;
  std::array<uint32_t, kMaxLutRows> queue{};  // rows in order of depth
  uint32_t queued = 0;
  depth[0] = 0;
  queue[queued++] = 0;
  for (uint32_t head = 0; head < queued; ++head) {
    const uint32_t row = queue[head];
    const int d = depth[row];
    const uint8_t* entries = g.luts.data() + uint64_t{row} * kLutRowSize;
    for (uint32_t i = 0; i < kLutRowSize; ++i) {
      const uint32_t v = entries[i];
      // Built only on failure: the walk visits up to 17 * 256 entries.
      auto where = [&] { return "luts row " + str(row) + " index " + str(i); };
      if (v >= kFirstPointerEntry) {
        const uint32_t target = kLutRowSize - v;  // spec 3.3: entry v points to row 256 - v
        if (target >= lengths_row) {
          return fail(ErrorCode::kBadLut, what,
                      where() + " = " + str(v) + " points to row " + str(target) +
                          (target == lengths_row ? ", which is the code-lengths row"
                                                 : ", which does not exist") +
                          " (luts has " + str(n_rows) + " rows)");
        }
        if (depth[target] == -1 && d < kMaxLutDepth) {
          depth[target] = static_cast<int8_t>(d + 1);
          queue[queued++] = target;
        }
        if (depth[target] != d + 1) ++info.unusable_lut_entries;
        continue;
      }
      // spec 3.3: a symbol found at depth d has a code of 8d+1 .. 8d+8 bits (so 1..32).
      const uint32_t len = lengths[v];
      if (len <= 8 * static_cast<uint32_t>(d) || len > 8 * static_cast<uint32_t>(d) + 8) {
        ++info.unusable_lut_entries;
        continue;
      }
      info.code_lengths[v] = static_cast<uint8_t>(len);
    }
  }
  return Status::ok();
}

// spec 3.6: output positions start at 0, never decrease, end at n; each block holds at most
// one weight per bit, and every block but the last holds at least one code start (the stream
// covers it completely and codes are at most 32 bits).
Status check_output_positions(const GroupView& g, const std::string& what, GroupInfo& info) {
  const uint64_t n_blocks = info.n_blocks;
  const uint32_t first = read_output_position(g, 0);
  if (first != 0) {
    return fail(ErrorCode::kBadOutputPositions, what,
                "output_positions[0] = " + str(first) + ", must be 0");
  }
  uint32_t prev = first;
  uint32_t max_block = 0;
  for (uint64_t b = 1; b <= n_blocks; ++b) {
    const uint32_t cur = read_output_position(g, b);
    const std::string pair = "output_positions[" + str(b - 1) + "] = " + str(prev) +
                             ", output_positions[" + str(b) + "] = " + str(cur);
    if (cur < prev) {
      return fail(ErrorCode::kBadOutputPositions, what, pair + ": decreasing");
    }
    const uint32_t weights = cur - prev;
    if (weights > kBitsPerBlock) {
      return fail(ErrorCode::kBadOutputPositions, what,
                  pair + ": block " + str(b - 1) + " would hold " + str(weights) +
                      " weights, more than its " + str(kBitsPerBlock) +
                      " bits (a code is at least 1 bit)");
    }
    if (weights == 0 && b < n_blocks) {
      return fail(ErrorCode::kBadOutputPositions, what,
                  pair + ": block " + str(b - 1) +
                      " holds no code start, but only the last block may be empty");
    }
    if (weights > max_block) max_block = weights;
    prev = cur;
  }
  if (prev != info.n_elements) {
    return fail(ErrorCode::kBadOutputPositions, what,
                "output_positions[" + str(n_blocks) + "] = " + str(prev) +
                    ", must equal n_elements = " + str(info.n_elements));
  }
  info.max_block_weights = max_block;
  return Status::ok();
}

// spec 3.8 rule S1 (3.2): member boundaries strictly increase inside (0, n).
Status check_split_positions(const GroupView& g, const std::string& what, uint64_t n) {
  const uint64_t count = g.split_positions.size() / 8;
  int64_t prev = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const int64_t cur = static_cast<int64_t>(load_le64(g.split_positions.data() + 8 * i));
    if (cur <= prev || static_cast<uint64_t>(cur) >= n) {
      return fail(ErrorCode::kBadGroup, what,
                  "split_positions[" + str(i) + "] = " + std::to_string(cur) +
                      (i == 0 ? ", must be > 0"
                              : ", must be > split_positions[" + str(i - 1) +
                                    "] = " + std::to_string(prev)) +
                      " and < n_elements = " + str(n));
    }
    prev = cur;
  }
  return Status::ok();
}

}  // namespace

Result<GroupInfo> validate_group(const GroupView& group, const std::string& what) {
  DF11_RETURN_IF_ERROR(check_sizes(group, what));
  GroupInfo info;
  info.n_elements = group.n_elements();
  info.n_bytes = group.n_bytes();
  info.n_blocks = group.n_blocks();
  info.n_luts = group.n_luts();
  DF11_RETURN_IF_ERROR(check_luts(group, what, info));
  DF11_RETURN_IF_ERROR(check_output_positions(group, what, info));
  DF11_RETURN_IF_ERROR(check_split_positions(group, what, info.n_elements));
  return info;
}

}  // namespace df11
