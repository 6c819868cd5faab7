// Shared input reading of the execution-layout fuzz targets: bytes 0..1 give the shape
// (rows 1..48, cols 1..160), byte 2 the weights' flavour, the rest the weights.
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

}  // namespace df11::fuzz
