// Shared input reading of the execution-layout fuzz targets: bytes 0..1 give the shape
// (rows 1..48, cols 1..160), byte 2 the weights' flavour, the rest the weights; the
// validators' targets read edits after them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace df11::fuzz {

struct ExecInput {
  uint32_t rows = 0, cols = 0;
  std::vector<uint16_t> weights;  // rows * cols, row-major
  size_t used = 0;                // input bytes consumed
};

// Flavour (byte 2): bit 0 folds each exponent into 112..127 (few exceptions), otherwise the
// patterns are taken as they come (any exponent, NaN payloads, subnormals); weights past the
// input's end repeat it.
inline bool read_exec_input(const uint8_t* data, size_t size, ExecInput& in) {
  if (size < 5) return false;
  in.rows = 1 + data[0] % 48;
  in.cols = 1 + data[1] % 160;
  const bool fold = data[2] & 1;
  const size_t n = size_t{in.rows} * in.cols;
  const size_t avail = (size - 3) / 2;
  in.used = 3 + 2 * std::min(avail, n);
  in.weights.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const size_t k = 3 + 2 * (i % avail);
    uint16_t w = static_cast<uint16_t>(data[k] | data[k + 1] << 8);
    if (fold) w = static_cast<uint16_t>((w & 0x807F) | ((112 + ((w >> 7) & 15)) << 7));
    in.weights[i] = w;
  }
  return true;
}

// The validators' targets: the input's bytes from `from` on, 3 at a time, edit blob `b`: a
// 16-bit offset scaled to the blob and a value written there; an offset of 0xFFFF cuts the
// blob at the value's fraction instead.
inline void apply_edits(const uint8_t* data, size_t size, size_t from, std::vector<uint8_t>& b) {
  for (size_t k = from; k + 3 <= size; k += 3) {
    const uint32_t off = data[k] | data[k + 1] << 8;
    if (off == 0xFFFF) {
      b.resize(b.size() * data[k + 2] / 256);
      continue;
    }
    if (b.empty()) break;
    b[uint64_t{off} * b.size() / 0xFFFF % b.size()] = data[k + 2];
  }
}

}  // namespace df11::fuzz
