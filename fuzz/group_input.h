// Fuzz input -> DF11 group, shared by the targets that decode arbitrary groups (cpu_decode,
// cuda_host_decode), so that their corpora use one layout.
//
// Layout (little-endian; bytes past the end of the input read as zero, so every input is a
// group):
//   0      flags: bit 0 = take the three array sizes from bytes 7..12 instead of deriving them
//   1      n_luts: 2 + (byte % 17)
//   2..3   n_elements - 1 (uint16)
//   4..5   n_bytes (uint16)
//   6      number of split positions (byte % 4)
//   7..12  with flag bit 0: raw sizes of luts, output_positions, gaps (uint16 each)
//   13..18 spare
//   19..   luts, encoded_exponent, sign_mantissa, output_positions, gaps, split_positions,
//          then whatever the target reads next
// Without flag bit 0, output_positions and gaps get the sizes spec 3.2 requires for n_bytes,
// so that most inputs reach the decoders.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "df11/group.h"

namespace df11::fuzz {

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : uint8_t{0}; }
  uint32_t u16() { return byte() | (uint32_t{byte()} << 8); }
  // The next n bytes, zero past the end of the input.
  std::vector<uint8_t> bytes(size_t n) {
    std::vector<uint8_t> v(n, 0);
    const size_t have = pos_ < size_ ? std::min(n, size_ - pos_) : 0;
    if (have > 0) std::copy(data_ + pos_, data_ + pos_ + have, v.begin());
    pos_ += n;
    return v;
  }
  void skip(size_t n) { pos_ += n; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Reads one group in the layout above; `in` is left after its split positions. The group
// has sign_mantissa.size() = n_elements >= 1 weights.
inline GroupBuffers read_group(Reader& in) {
  const uint8_t flags = in.byte();
  const uint32_t n_luts = 2 + in.byte() % 17;
  const uint64_t n_elements = uint64_t{in.u16()} + 1;
  const uint64_t n_bytes = in.u16();
  const uint32_t n_splits = in.byte() % 4;
  const uint64_t n_blocks = (n_bytes + kBytesPerBlock - 1) / kBytesPerBlock;
  uint64_t luts_size = uint64_t{n_luts} * kLutRowSize;
  uint64_t op_size = 4 * (n_blocks + 1);
  uint64_t gaps_size = gap_bytes_for_blocks(n_blocks);
  const uint32_t raw_luts = in.u16(), raw_op = in.u16(), raw_gaps = in.u16();
  in.skip(6);
  if (flags & 1) {
    luts_size = raw_luts % (kLutRowSize * (kMaxLutRows + 2));
    op_size = raw_op % 128;
    gaps_size = raw_gaps % 8192;
  }
  GroupBuffers g;
  g.luts = in.bytes(luts_size);
  g.encoded_exponent = in.bytes(n_bytes);
  g.sign_mantissa = in.bytes(n_elements);
  g.output_positions = in.bytes(op_size);
  g.gaps = in.bytes(gaps_size);
  g.split_positions = in.bytes(8 * n_splits);
  return g;
}

}  // namespace df11::fuzz
