// Fuzz target: BF16 matrices of any shape and content through the execution layout's reference
// encoder, validator and decoder (spec/EXEC_LAYOUT.md). Every weight must come back bit for bit,
// the encoder's blob must be valid, and encoding twice must give identical bytes.
#include <cstddef>
#include <cstdint>

#include "df11/exec_decode.h"
#include "df11/exec_encode.h"
#include "exec_layout_input.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  df11::fuzz::ExecInput in;
  if (!df11::fuzz::read_exec_input(data, size, in)) return 0;
  const auto blob = df11::encode_exec_matrix(in.weights, in.rows, in.cols, "fuzz");
  FUZZ_CHECK(blob.is_ok());
  FUZZ_CHECK(df11::validate_exec_matrix(*blob, "fuzz").is_ok());
  std::vector<uint16_t> back(in.weights.size(), 0x5555);
  FUZZ_CHECK(df11::decode_exec_matrix(*blob, back, "fuzz").is_ok());
  FUZZ_CHECK(back == in.weights);
  const auto again = df11::encode_exec_matrix(in.weights, in.rows, in.cols, "fuzz");
  FUZZ_CHECK(again.is_ok() && *again == *blob);
  return 0;
}
