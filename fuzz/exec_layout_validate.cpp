// Fuzz target: corrupted execution-layout blobs through the validator and the CPU decoder
// (spec/EXEC_LAYOUT.md section 3). A valid blob is encoded from the input's weights, then the
// bytes after them (pairs of offset, value) overwrite bytes of it. The validator must reject
// with kBadGroup or kTruncated, or accept a blob that is canonical: re-encoding what it decodes
// to, with its base, gives the same bytes. Nothing is read or written out of bounds.
#include <cstddef>
#include <cstdint>

#include "df11/exec_decode.h"
#include "df11/exec_encode.h"
#include "exec_layout_input.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  df11::fuzz::ExecInput in;
  if (!df11::fuzz::read_exec_input(data, size, in)) return 0;
  auto blob = df11::encode_exec_matrix(in.weights, in.rows, in.cols, "fuzz");
  FUZZ_CHECK(blob.is_ok());
  std::vector<uint8_t> b = *blob;
  df11::fuzz::apply_edits(data, size, in.used, b);
  const auto h = df11::validate_exec_matrix(b, "fuzz");
  if (!h.is_ok()) {
    const auto code = h.status().code();
    FUZZ_CHECK(code == df11::ErrorCode::kBadGroup || code == df11::ErrorCode::kTruncated);
    return 0;
  }
  std::vector<uint16_t> w(uint64_t{h->rows} * h->cols);
  FUZZ_CHECK(df11::decode_exec_matrix(b, w, "fuzz").is_ok());
  const auto again = df11::encode_exec_matrix_with_base(w, h->rows, h->cols, h->base, "fuzz");
  FUZZ_CHECK(again.is_ok());
  b.resize(h->total_bytes);  // bytes past the blob's total are not the blob's
  FUZZ_CHECK(*again == b);
  return 0;
}
