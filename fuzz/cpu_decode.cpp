// Fuzz target: arbitrary bytes as a DF11 group, through validate_group and both CPU
// decoders. Neither may crash or read out of bounds; they must agree (same error, or the
// same weights), and a ranged decode of a good group must equal the full decode.
//
// Input layout: a group as in group_input.h, then two uint16 choosing the range of a ranged
// decode.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "df11/decoder.h"
#include "df11/group.h"
#include "group_input.h"

namespace {

[[noreturn]] void fail() { std::abort(); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace df11;
  fuzz::Reader in(data, size);
  GroupBuffers g = fuzz::read_group(in);
  const uint64_t n_elements = g.sign_mantissa.size();
  const uint64_t range_first = in.u16();
  const uint64_t range_size = in.u16();

  const GroupView view = g.view();
  const Result<GroupInfo> info = validate_group(view, "fuzz");
  std::vector<uint16_t> ref(n_elements), fast(n_elements);
  const Status r = decode_group_reference(view, ref, "fuzz");
  const Status f = decode_group(view, fast, "fuzz");
  if (!info.is_ok() && (r.to_string() != info.status().to_string())) fail();
  if (r.to_string() != f.to_string()) fail();
  if (r.is_ok() && ref != fast) fail();

  if (info.is_ok()) {
    const uint64_t first = range_first % n_elements;
    const uint64_t count = range_size % (n_elements - first + 1);
    std::vector<uint16_t> piece(count);
    const Status p = decode_group(view, piece, "fuzz", first, &*info);
    // A good group decodes in any range; a bad one may pass if the fault is elsewhere.
    if (f.is_ok() && !p.is_ok()) fail();
    if (f.is_ok() && !std::equal(piece.begin(), piece.end(), fast.begin() + first)) fail();
  }
  return 0;
}
