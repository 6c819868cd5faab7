// Fuzz target: arbitrary bytes as a DF11 group, through validate_group and both CPU
// decoders. Neither may crash or read out of bounds; they must agree (same error, or the
// same weights), and a ranged decode of a good group must equal the full decode. The fast
// decoder runs on oneTBB's threads and on a caller's team (CpuTeam): same error or weights.
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

// A team as GOMP_parallel's contract allows: fn(arg) once per member, here one after another
// on this thread (the first call takes every piece; the others find none left).
void serial_team(void (*fn)(void*), void* arg, unsigned threads, unsigned /*flags*/) {
  for (unsigned i = 0; i < threads; ++i) fn(arg);
}

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
  const CpuTeam team{serial_team, 3};
  std::vector<uint16_t> teamed(n_elements);
  const Status t = decode_group(view, teamed, "fuzz", 0, nullptr, &team);
  if (t.to_string() != f.to_string()) fail();
  if (t.is_ok() && teamed != fast) fail();

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
