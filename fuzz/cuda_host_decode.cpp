// Fuzz target: arbitrary bytes as a DF11 group through the CUDA decoder's host side
// (validation, kernel description, status records) and its exact host emulation of the
// kernel (decode_group_emulated), against the CPU reference decoder. Needs no GPU and no
// nvcc (library df11_cuda_host).
//
// Differential properties (spec 4: a decoder MUST decode a valid group to its weights and
// MUST reject an invalid one):
//  - an invalid group (validate_group fails) gets the same status from both;
//  - otherwise both succeed or both fail (the two detect problems in different orders, so
//    the error code may differ), and on success the uint16 outputs are bit-identical.
//
// Input layout: a group as in group_input.h.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda_emulation.h"
#include "df11/decoder.h"
#include "df11/group.h"
#include "fuzz_check.h"
#include "group_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace df11;
  fuzz::Reader in(data, size);
  const GroupBuffers g = fuzz::read_group(in);
  const GroupView view = g.view();
  const size_t n_elements = g.sign_mantissa.size();

  const Result<GroupInfo> info = validate_group(view, "fuzz");
  // Poisoned outputs: a weight a decoder forgets to write differs between the two.
  std::vector<uint16_t> ref(n_elements, 0x0123), emu(n_elements, 0x4567);
  const Status r = decode_group_reference(view, ref, "fuzz");
  const Status e = cuda::decode_group_emulated(view, emu, "fuzz");
  if (!info.is_ok()) {
    FUZZ_CHECK(r.to_string() == info.status().to_string());
    FUZZ_CHECK(e.to_string() == info.status().to_string());
    return 0;
  }
  FUZZ_CHECK(r.is_ok() == e.is_ok());
  if (r.is_ok()) FUZZ_CHECK(ref == emu);
  return 0;
}
