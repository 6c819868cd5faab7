// Fuzz target: arbitrary BF16 weights through encode_group and both CPU decoders. The
// weights must come back bit for bit, encoding twice must give identical bytes, and weights
// with an exponent >= 240 must be refused as uncodable (spec 2.1).
//
// Input layout: byte 0 = flags (bit 0: keep exponents >= 240 instead of folding them into
// 112..127; bits 1..2: number of members - 1); then the weights as little-endian uint16;
// members split the weights at the positions given by bytes 1..3 (scaled to the count).
//
// Speed (ASan+UBSan, 2-core build machine): inputs of ~700 random weights spread over ~200
// exponents, like the seeds, almost always need the table-limited code search
// (lut_limited_lengths, spec 2.4), and each input is encoded twice: ~150 exec/s with the
// default length limit (inputs grow from the seeds' ~1.4 KB). Below ~250 weights (-max_len=512)
// random exponents rarely need it: ~2,400 exec/s. Run both: the default for the code search,
// -max_len=512 for throughput on everything else.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "df11/decoder.h"
#include "df11/encoder.h"

namespace {

[[noreturn]] void fail() { std::abort(); }

bool same_bytes(const df11::GroupBuffers& a, const df11::GroupBuffers& b) {
  return a.luts == b.luts && a.encoded_exponent == b.encoded_exponent &&
         a.sign_mantissa == b.sign_mantissa && a.output_positions == b.output_positions &&
         a.gaps == b.gaps && a.split_positions == b.split_positions;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace df11;
  if (size < 6) return 0;
  const uint8_t flags = data[0];
  const bool keep_uncodable = flags & 1;
  const uint32_t n_members = 1 + ((flags >> 1) & 3);
  std::vector<uint16_t> weights((size - 4) / 2);
  bool uncodable = false;
  for (size_t i = 0; i < weights.size(); ++i) {
    uint16_t w = static_cast<uint16_t>(data[4 + 2 * i] | (data[5 + 2 * i] << 8));
    if (((w >> 7) & 0xFF) >= 240) {
      if (keep_uncodable) {
        uncodable = true;
      } else {
        w &= 0xBFFF;  // exponent 240..255 -> 112..127
      }
    }
    weights[i] = w;
  }
  // Member boundaries: non-decreasing cut points; empty members are allowed by the encoder
  // API only if it says so, so cuts are made strictly inside the weights.
  std::vector<std::span<const uint16_t>> members;
  size_t begin = 0;
  for (uint32_t m = 1; m < n_members; ++m) {
    const size_t cut = 1 + data[m] * (weights.size() - 1) / 256;
    if (cut <= begin || cut >= weights.size()) continue;
    members.emplace_back(weights.data() + begin, cut - begin);
    begin = cut;
  }
  members.emplace_back(weights.data() + begin, weights.size() - begin);

  Result<GroupBuffers> g = encode_group(members);
  if (uncodable) {
    if (g.status().code() != ErrorCode::kUncodable) fail();
    return 0;
  }
  if (!g.is_ok()) fail();
  std::vector<uint16_t> ref(weights.size()), fast(weights.size());
  if (!decode_group_reference(g->view(), ref, "fuzz").is_ok() || ref != weights) fail();
  if (!decode_group(g->view(), fast, "fuzz").is_ok() || fast != weights) fail();
  Result<GroupBuffers> again = encode_group(members);
  if (!again.is_ok() || !same_bytes(*g, *again)) fail();
  return 0;
}
