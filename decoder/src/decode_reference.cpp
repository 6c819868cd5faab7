// Reference DF11 decoder (spec 4.2): sequential, written to be read next to the spec.
//
// It decodes the whole stream from bit 0 with the lookup tables exactly as spec 3.3 defines
// them and checks every piece of redundant metadata against what it decodes: the gap of
// every window that holds a code start, every output position, and the stream's length.
// Speed is not a goal; decode_group() is the fast path.
#include <cstdint>
#include <span>
#include <string>

#include "bf16.h"
#include "df11/decoder.h"
#include "df11/group.h"
#include "reference_scan.h"

namespace df11 {
namespace {

std::string str(uint64_t v) { return std::to_string(v); }

// The 8 stream bits starting at bit `pos`, MSB-first; bits at and past the end read as zero
// (spec 4.1).
uint32_t read_8_bits(std::span<const uint8_t> stream, uint64_t pos) {
  const uint64_t byte = pos / 8;
  const uint32_t hi = byte < stream.size() ? stream[byte] : 0;
  const uint32_t lo = byte + 1 < stream.size() ? stream[byte + 1] : 0;
  return (((hi << 8) | lo) >> (8 - pos % 8)) & 0xFF;
}

struct DecodedCode {
  bool usable = false;  // false: the walk met an entry no valid code uses (row, index, entry)
  uint8_t exponent = 0;
  uint32_t length = 0;  // bits
  uint32_t row = 0;
  uint32_t index = 0;
  uint32_t entry = 0;
};

// spec 3.3: index the root row with the next 8 bits; an entry >= 240 continues in row
// 256 - entry with the following 8 bits; an entry < 240 is the exponent, and the lengths row
// says how many bits the code has. A usable pointer leads exactly one level down and a
// usable symbol at level d has 8d+1 .. 8d+8 bits; validate_group() has checked that every
// pointer names a table row and that levels stop at 3.
DecodedCode decode_one(const GroupView& group, const GroupInfo& info, uint64_t pos) {
  const uint8_t* lengths = group.luts.data() + uint64_t{info.n_luts - 1} * kLutRowSize;
  uint32_t row = 0;
  for (uint32_t level = 0;; ++level) {
    DecodedCode code;
    code.row = row;
    code.index = read_8_bits(group.encoded_exponent, pos + 8 * level);
    code.entry = group.luts[uint64_t{row} * kLutRowSize + code.index];
    if (code.entry >= kFirstPointerEntry) {
      const uint32_t target = kLutRowSize - code.entry;
      // The row bound is validate_group()'s rule L2, rechecked for decode_group(), which may
      // run this with a caller's GroupInfo.
      if (target >= info.n_luts - 1 || info.lut_row_depth[target] != static_cast<int>(level) + 1) {
        return code;
      }
      row = target;
      continue;
    }
    code.length = lengths[code.entry];
    code.usable = code.length > 8 * level && code.length <= 8 * level + 8;
    code.exponent = static_cast<uint8_t>(code.entry);
    return code;
  }
}

}  // namespace

namespace detail {

Status reference_scan(const GroupView& group, const GroupInfo& info, const std::string& what,
                      ScanState from, uint64_t stop_bit, std::span<uint16_t> out) {
  const uint64_t end_bit = 8 * info.n_bytes;
  uint64_t pos = from.pos;           // start of the next code
  uint64_t checked_window = ~0ull;   // last window whose gap was checked
  uint64_t next_block = from.block;  // next output position to check

  for (uint64_t i = from.index; i < info.n_elements; ++i) {
    if (pos >= stop_bit) return Status::ok();
    if (pos >= end_bit) {
      return Status(ErrorCode::kCorruptData, what + ": the stream ends (bit " + str(end_bit) +
                                                 ") after " + str(i) +
                                                 " codes, n_elements = " + str(info.n_elements));
    }
    // spec 3.6: output position b counts the codes that start before bit 32768 * b.
    for (; next_block <= info.n_blocks && next_block * kBitsPerBlock <= pos; ++next_block) {
      const uint32_t op = read_output_position(group, next_block);
      if (op != i) {
        return Status(ErrorCode::kBadOutputPositions,
                      what + ": output_positions[" + str(next_block) + "] = " + str(op) + ", but " +
                          str(i) + " codes start before bit " + str(next_block * kBitsPerBlock));
      }
    }
    // spec 3.5: the gap of a window is the offset of the first code starting in it.
    const uint64_t window = pos / kBitsPerWindow;
    if (window != checked_window) {
      const uint32_t gap = read_gap(group.gaps, window);
      if (gap != pos % kBitsPerWindow) {
        return Status(ErrorCode::kBadGap, what + ": gaps field " + str(window) + " = " + str(gap) +
                                              ", first code in window starts at bit " +
                                              str(pos % kBitsPerWindow));
      }
      checked_window = window;
    }
    const DecodedCode code = decode_one(group, info, pos);
    if (!code.usable) {
      return Status(ErrorCode::kCorruptData, what + ": code " + str(i) + " at bit " + str(pos) +
                                                 " reaches luts row " + str(code.row) + " index " +
                                                 str(code.index) + " = " + str(code.entry) +
                                                 ", an entry no valid code uses");
    }
    if (pos + code.length > end_bit) {
      return Status(ErrorCode::kCorruptData,
                    what + ": code " + str(i) + " at bit " + str(pos) + " has " + str(code.length) +
                        " bits and runs past the end of the stream (bit " + str(end_bit) + ")");
    }
    if (!out.empty()) {
      out[i - from.index] = bf16_from_parts(group.sign_mantissa[i], code.exponent);
    }
    pos += code.length;
  }
  // Blocks past the last code start: every code starts before them.
  for (; next_block <= info.n_blocks; ++next_block) {
    const uint32_t op = read_output_position(group, next_block);
    if (op != info.n_elements) {
      return Status(ErrorCode::kBadOutputPositions,
                    what + ": output_positions[" + str(next_block) + "] = " + str(op) +
                        ", but all " + str(info.n_elements) + " codes start before bit " +
                        str(next_block * kBitsPerBlock));
    }
  }
  // spec 3.4: only the last byte may hold bits after the last code (padding).
  if ((pos + 7) / 8 != info.n_bytes) {
    return Status(ErrorCode::kCorruptData, what + ": the " + str(info.n_elements) +
                                               " codes end at bit " + str(pos) +
                                               ", but encoded_exponent has " + str(info.n_bytes) +
                                               " bytes (only the last byte may hold padding)");
  }
  return Status::ok();
}

}  // namespace detail

Status decode_group_reference(const GroupView& group, std::span<uint16_t> out,
                              const std::string& what) {
  DF11_ASSIGN_OR_RETURN(const GroupInfo info, validate_group(group, what));
  if (out.size() != info.n_elements) {
    return Status(ErrorCode::kInvalidArgument, what + ": output holds " + str(out.size()) +
                                                   " weights, the group has " +
                                                   str(info.n_elements));
  }
  return detail::reference_scan(group, info, what, detail::ScanState{}, ~uint64_t{0}, out);
}

}  // namespace df11
