// build_luts(): the decoder's lookup tables for a code (spec 3.3).
//
// Row 0 is indexed by the next 8 stream bits. A code of length <= 8 fills the 2^(8 - length)
// entries it prefixes with its exponent; a longer code's entry points (value 256 - r) to the
// subtable row r of its 8-bit prefix, indexed by the following 8 bits, and so on for 16- and
// 24-bit prefixes. Subtables are numbered level by level (all 8-bit prefixes, then 16-bit,
// then 24-bit), ascending prefix value within a level. The last row maps exponent -> length.
#include <algorithm>
#include <string>
#include <vector>

#include "df11/encoder.h"

namespace df11 {
namespace {

constexpr uint32_t kIndexBits = 8;
constexpr uint32_t kMaxLevels = (kMaxCodeLength - 1) / kIndexBits;  // 3 subtable levels

enum class Entry : uint8_t { kUnused, kSymbol, kPointer };

struct Subtable {
  uint32_t level;   // 1..3: indexed by code bits [8 * level, 8 * level + 8)
  uint32_t prefix;  // the first 8 * level code bits
  bool operator<(const Subtable& o) const {
    return level != o.level ? level < o.level : prefix < o.prefix;
  }
  bool operator==(const Subtable& o) const = default;
};

class TableBuilder {
 public:
  TableBuilder(std::vector<Subtable> subtables)
      : subtables_(std::move(subtables)),
        rows_(1 + subtables_.size() + 1),
        table_(size_t{rows_} * kLutRowSize, 0),
        kind_(table_.size(), Entry::kUnused) {}

  uint32_t row_of(uint32_t level, uint32_t prefix) const {
    const auto it = std::lower_bound(subtables_.begin(), subtables_.end(), Subtable{level, prefix});
    return 1 + static_cast<uint32_t>(it - subtables_.begin());
  }

  // Sets entries [first, first + count) of `row` to a symbol or a pointer. Two symbols on one
  // entry, or a symbol on a pointer, means one code is a prefix of another.
  Status set(uint32_t row, uint32_t first, uint32_t count, uint8_t value, Entry kind,
             uint32_t symbol) {
    for (uint32_t i = first; i < first + count; ++i) {
      const size_t at = size_t{row} * kLutRowSize + i;
      const bool same_pointer =
          kind == Entry::kPointer && kind_[at] == Entry::kPointer && table_[at] == value;
      if (kind_[at] != Entry::kUnused && !same_pointer) {
        return Status(ErrorCode::kInvalidArgument,
                      "build_luts: code is not prefix-free (exponent " + std::to_string(symbol) +
                          " collides in table row " + std::to_string(row) + ", entry " +
                          std::to_string(i) + ")");
      }
      table_[at] = value;
      kind_[at] = kind;
    }
    return Status::ok();
  }

  // Entries no code reaches (an incomplete code, e.g. one symbol) repeat the nearest used
  // entry of the same row, so a decoder reading garbage still finds a valid symbol or pointer
  // of the right depth. Every row has a used entry: row 0 holds the first code, a subtable
  // exists because some code has its prefix.
  void fill_unused(uint32_t table_rows) {
    for (uint32_t r = 0; r < table_rows; ++r) {
      uint8_t* row = table_.data() + size_t{r} * kLutRowSize;
      const Entry* kind = kind_.data() + size_t{r} * kLutRowSize;
      int first_used = -1;
      for (uint32_t i = 0; i < kLutRowSize && first_used < 0; ++i) {
        if (kind[i] != Entry::kUnused) first_used = static_cast<int>(i);
      }
      uint8_t last = row[first_used];
      for (uint32_t i = 0; i < kLutRowSize; ++i) {
        if (kind[i] == Entry::kUnused) {
          row[i] = last;
        } else {
          last = row[i];
        }
      }
    }
  }

  uint32_t rows() const { return rows_; }
  std::vector<uint8_t>& table() { return table_; }

 private:
  std::vector<Subtable> subtables_;
  uint32_t rows_;
  std::vector<uint8_t> table_;
  std::vector<Entry> kind_;
};

Status check_code(const Code& code) {
  uint64_t kraft = 0;  // units of 2^-32
  bool any = false;
  for (uint32_t s = 0; s < 256; ++s) {
    const uint32_t l = code.length[s];
    if (l == 0) continue;
    any = true;
    if (l > kMaxCodeLength) {
      return Status(ErrorCode::kInvalidArgument, "build_luts: exponent " + std::to_string(s) +
                                                     " has code length " + std::to_string(l) +
                                                     " > 32");
    }
    if (s > kMaxCodableExponent) {
      return Status(ErrorCode::kInvalidArgument,
                    "build_luts: exponent " + std::to_string(s) + " >= 240 has a code");
    }
    if (l < 32 && (code.bits[s] >> l) != 0) {
      return Status(ErrorCode::kInvalidArgument, "build_luts: code of exponent " +
                                                     std::to_string(s) + " has more than " +
                                                     std::to_string(l) + " bits");
    }
    kraft += uint64_t{1} << (kMaxCodeLength - l);
  }
  if (!any) return Status(ErrorCode::kInvalidArgument, "build_luts: code has no symbols");
  if (kraft > (uint64_t{1} << kMaxCodeLength)) {
    return Status(ErrorCode::kInvalidArgument, "build_luts: code is not prefix-free");
  }
  return Status::ok();
}

}  // namespace

Result<std::vector<uint8_t>> build_luts(const Code& code) {
  DF11_RETURN_IF_ERROR(check_code(code));

  std::vector<Subtable> subtables;
  for (uint32_t s = 0; s < 256; ++s) {
    const uint32_t l = code.length[s];
    for (uint32_t level = 1; level <= kMaxLevels && l > kIndexBits * level; ++level) {
      subtables.push_back({level, code.bits[s] >> (l - kIndexBits * level)});
    }
  }
  std::sort(subtables.begin(), subtables.end());
  subtables.erase(std::unique(subtables.begin(), subtables.end()), subtables.end());
  if (subtables.size() > kMaxSubtables) {
    return Status(ErrorCode::kInvalidArgument,
                  "build_luts: code needs " + std::to_string(subtables.size()) +
                      " subtables, the tables allow " + std::to_string(kMaxSubtables));
  }

  TableBuilder t(std::move(subtables));
  for (uint32_t s = 0; s < 256; ++s) {
    const uint32_t l = code.length[s];
    if (l == 0) continue;
    const uint32_t bits = code.bits[s];
    uint32_t row = 0;
    for (uint32_t level = 0;; ++level) {
      const uint32_t consumed = kIndexBits * level;  // bits resolved by the rows above
      const uint32_t left = l - consumed;
      if (left <= kIndexBits) {
        // The code ends in this row: fill every index that starts with its last bits.
        const uint32_t tail = bits & ((uint32_t{1} << left) - 1);
        const uint32_t shift = kIndexBits - left;
        DF11_RETURN_IF_ERROR(t.set(row, tail << shift, uint32_t{1} << shift,
                                   static_cast<uint8_t>(s), Entry::kSymbol, s));
        break;
      }
      const uint32_t index = (bits >> (left - kIndexBits)) & 0xFF;
      const uint32_t child = t.row_of(level + 1, bits >> (left - kIndexBits));
      DF11_RETURN_IF_ERROR(
          t.set(row, index, 1, static_cast<uint8_t>(kLutRowSize - child), Entry::kPointer, s));
      row = child;
    }
  }
  const uint32_t lengths_row = t.rows() - 1;
  t.fill_unused(lengths_row);
  std::vector<uint8_t>& table = t.table();
  for (uint32_t s = 0; s < 256; ++s) {
    table[size_t{lengths_row} * kLutRowSize + s] = code.length[s];
  }
  return std::move(table);
}

}  // namespace df11
