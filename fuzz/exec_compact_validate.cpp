// Fuzz target: the compact execution layout (spec/EXEC_COMPACT.md) through its reference encoder,
// validator and decoder. A blob is encoded from the input's weights and must decode to them bit
// for bit; then the bytes after them (pairs of offset, value) overwrite bytes of it, and the
// validator must reject with kBadGroup or kTruncated, or accept a blob that is canonical:
// re-encoding what it decodes to, with its code lengths, gives the same bytes. Nothing is read
// or written out of bounds.
#include <cstddef>
#include <cstdint>

#include "df11/exec_compact_encode.h"
#include "df11/exec_decode.h"
#include "exec_layout_input.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  df11::fuzz::ExecInput in;
  if (!df11::fuzz::read_exec_input(data, size, in)) return 0;
  auto blob = df11::encode_compact_matrix(in.weights, in.rows, in.cols, "fuzz");
  FUZZ_CHECK(blob.is_ok());
  std::vector<uint16_t> w(in.weights.size(), 0x5555);
  FUZZ_CHECK(df11::decode_compact_matrix(*blob, w, "fuzz").is_ok());
  FUZZ_CHECK(w == in.weights);
  std::vector<uint8_t> b = *blob;
  df11::fuzz::apply_edits(data, size, in.used, b);
  const auto h = df11::validate_compact_matrix(b, "fuzz");
  if (!h.is_ok()) {
    const auto code = h.status().code();
    FUZZ_CHECK(code == df11::ErrorCode::kBadGroup || code == df11::ErrorCode::kTruncated);
    return 0;
  }
  w.assign(uint64_t{h->rows} * h->cols, 0);
  FUZZ_CHECK(df11::decode_compact_matrix(b, w, "fuzz").is_ok());
  const auto g = df11::compact_geometry(h->rows, h->cols, "fuzz");
  FUZZ_CHECK(g.is_ok());
  const auto again = df11::encode_compact_matrix_with_lengths(
      w, h->rows, h->cols,
      std::span<const uint8_t, df11::kCompactSymbols>(b.data() + g->lengths, df11::kCompactSymbols),
      "fuzz");
  FUZZ_CHECK(again.is_ok());
  b.resize(h->total_bytes);  // bytes past the blob's total are not the blob's
  FUZZ_CHECK(*again == b);
  return 0;
}
