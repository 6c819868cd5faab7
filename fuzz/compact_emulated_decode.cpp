// Fuzz target: the compact layout's GPU decode as its host emulation runs it
// (compact_emulation.h: the kernels' per-lane arithmetic of decoder/cuda/host/compact_core.h,
// word staging, clamped reads and two-codeword decode table included). A blob is encoded from
// the input's weights and must decode to them bit for bit; then the bytes after them (pairs of
// offset, value) overwrite bytes of it, and whatever passes the header checks the kernels rely
// on (H1..H5) is decoded with the table of its code lengths (or, where those are no code, the
// original one, as a caller could pass a stale table): the result is either success or
// kCorruptData, never a read or write out of bounds; a blob the validator accepts decodes to
// what the reference decoder gives.
#include <cstddef>
#include <cstdint>

#include "compact_emulation.h"
#include "df11/exec_compact_encode.h"
#include "df11/exec_decode.h"
#include "exec_layout_input.h"
#include "fuzz_check.h"

namespace {

df11::Result<df11::CompactCode> code_of(const std::vector<uint8_t>& blob, uint32_t rows,
                                        uint32_t cols) {
  const auto g = df11::compact_geometry(rows, cols, "fuzz");
  if (!g.is_ok()) return g.status();
  if (blob.size() < g->lengths + df11::kCompactSymbols) {
    return df11::Status(df11::ErrorCode::kTruncated, "fuzz: no code lengths");
  }
  return df11::compact_code(std::span<const uint8_t, df11::kCompactSymbols>(
                                blob.data() + g->lengths, df11::kCompactSymbols),
                            "fuzz");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  df11::fuzz::ExecInput in;
  if (!df11::fuzz::read_exec_input(data, size, in)) return 0;
  auto blob = df11::encode_compact_matrix(in.weights, in.rows, in.cols, "fuzz");
  FUZZ_CHECK(blob.is_ok());
  const auto code = code_of(*blob, in.rows, in.cols);
  FUZZ_CHECK(code.is_ok());
  std::vector<uint16_t> w(in.weights.size(), 0x5555);
  FUZZ_CHECK(df11::cuda::compact_to_bf16_emulated(*blob, code->table, w, "fuzz").is_ok());
  FUZZ_CHECK(w == in.weights);

  std::vector<uint8_t> b = *blob;
  df11::fuzz::apply_edits(data, size, in.used, b);
  const auto h = df11::read_compact_header(b, "fuzz");
  if (!h.is_ok()) return 0;  // the launcher's caller reads the header first
  const auto edited = code_of(b, h->rows, h->cols);
  const df11::CompactCode& table = edited.is_ok() ? *edited : *code;
  std::vector<uint16_t> out(uint64_t{h->rows} * h->cols, 0);
  const df11::Status s = df11::cuda::compact_to_bf16_emulated(b, table.table, out, "fuzz");
  FUZZ_CHECK(s.is_ok() || s.code() == df11::ErrorCode::kCorruptData);
  if (df11::validate_compact_matrix(b, "fuzz").is_ok()) {
    FUZZ_CHECK(s.is_ok());
    std::vector<uint16_t> want(out.size(), 0);
    FUZZ_CHECK(df11::decode_compact_matrix(b, want, "fuzz").is_ok());
    FUZZ_CHECK(out == want);
  }
  return 0;
}
