// Groups for the CUDA decoder tests: real encoder output over many sizes and distributions
// (degenerate ones included), multi-member groups, and hand-built groups
// (tests/common/decoder_test_groups.h) for shapes the encoder never makes: the deepest
// codes, fixed lengths straddling every boundary, an empty last block, official EOF entries.
// Each case carries the original BF16 patterns: the expected output, bit for bit.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "decoder_test_groups.h"
#include "df11/encoder.h"
#include "df11/group.h"
#include "encoder_test_data.h"

namespace df11::cuda_test {

struct Case {
  std::string name;
  GroupBuffers group;
  std::vector<uint16_t> weights;  // the original patterns, members concatenated
};

inline std::vector<uint8_t> exponent_range(uint8_t first, int count) {
  std::vector<uint8_t> v(static_cast<size_t>(count));
  std::iota(v.begin(), v.end(), first);
  return v;
}

// Encodes `members` with df11::encode_group; fails the test (and returns an empty case) if
// the encoder refuses.
inline Case encoded(const std::string& name, std::vector<std::vector<uint16_t>> members) {
  Case c;
  c.name = name;
  std::vector<std::span<const uint16_t>> spans;
  for (const auto& m : members) {
    spans.emplace_back(m);
    c.weights.insert(c.weights.end(), m.begin(), m.end());
  }
  Result<GroupBuffers> g = encode_group(spans);
  EXPECT_TRUE(g.is_ok()) << name << ": " << g.status().to_string();
  if (g.is_ok()) c.group = std::move(*g);
  return c;
}

inline Case hand(const std::string& name, const test::HandCode& code,
                 std::vector<uint16_t> weights) {
  Case c;
  c.name = name;
  c.group = test::hand_encode(code, weights);
  c.weights = std::move(weights);
  return c;
}

// `n` patterns with exponents drawn uniformly from `symbols`, random sign and mantissa.
inline std::vector<uint16_t> uniform_over(const std::vector<uint8_t>& symbols, uint64_t n,
                                          uint64_t seed) {
  std::vector<uint32_t> exps(symbols.begin(), symbols.end());
  return testing::bf16_with_exponents(n, exps, std::vector<double>(exps.size(), 1.0), seed);
}

// Geometric exponent distribution (p ~ 2^-k over `count` exponents): long, deep codes.
inline std::vector<uint16_t> geometric_exponents(uint64_t n, uint32_t first, uint32_t count,
                                                 uint64_t seed) {
  std::vector<uint32_t> exps(count);
  std::vector<double> weights(count);
  for (uint32_t k = 0; k < count; ++k) {
    exps[k] = first + k;
    weights[k] = std::ldexp(1.0, -static_cast<int>(k));
  }
  return testing::bf16_with_exponents(n, exps, weights, seed);
}

// Every case, small to a few MB. `large` adds multi-megabyte groups (GPU tests only: the
// host emulation is slow).
inline std::vector<Case> all_cases(bool large) {
  using testing::gaussian_bf16;
  std::vector<Case> cases;
  // Sizes around window (8 bytes) and block (4096 bytes) multiples of a ~2.6-bit stream.
  for (uint64_t n : {1ull, 2ull, 3ull, 7ull, 25ull, 100ull, 4095ull, 12000ull, 12600ull, 12700ull,
                     25300ull, 100001ull, 262144ull}) {
    cases.push_back(
        encoded("gaussian n=" + std::to_string(n), {gaussian_bf16(n, 0.5 / 64, 1000 + n)}));
  }
  cases.push_back(encoded("multi-member 3 tensors",
                          {gaussian_bf16(4096 * 3, 0.5 / 64, 1), gaussian_bf16(1024 * 5, 0.02, 2),
                           gaussian_bf16(77, 1.0, 3)}));
  cases.push_back(encoded("multi-member 7 small",
                          {gaussian_bf16(1, 1, 4), gaussian_bf16(2, 1, 5), gaussian_bf16(3, 1, 6),
                           gaussian_bf16(5000, 1, 7), gaussian_bf16(1, 1e-3, 8),
                           gaussian_bf16(9, 1, 9), gaussian_bf16(4097, 1e-2, 10)}));
  // Degenerate distributions.
  cases.push_back(encoded("one value repeated", {std::vector<uint16_t>(70001, 0x3F80)}));
  cases.push_back(encoded("zeros and negative zeros", {[] {
                            std::vector<uint16_t> w(40000);
                            testing::TestRng rng(5);
                            for (auto& x : w) x = rng.below(2) ? 0x8000 : 0x0000;
                            return w;
                          }()}));
  cases.push_back(
      encoded("two exponents", {testing::bf16_with_exponents(50000, {126, 127}, {0.5, 0.5}, 11)}));
  cases.push_back(encoded("subnormals and exponent 239",
                          {testing::bf16_with_exponents(30000, {0, 1, 239}, {0.7, 0.2, 0.1}, 12)}));
  cases.push_back(encoded("every codable pattern", {testing::all_codable_bf16()}));
  cases.push_back(
      encoded("geometric 40 exponents (long codes)", {geometric_exponents(200000, 60, 40, 13)}));
  cases.push_back(encoded("uniform over 240 exponents", {[] {
                            std::vector<uint16_t> w(150000);
                            testing::TestRng rng(14);
                            for (auto& x : w) {
                              const auto e = static_cast<uint32_t>(rng.below(240));
                              x = static_cast<uint16_t>((rng.next() & 0x807F) | (e << 7));
                            }
                            return w;
                          }()}));
  cases.push_back(encoded("gaussian with many outliers", {gaussian_bf16(300000, 0.01, 15, 0.01)}));

  // Hand-built groups.
  {
    const auto symbols = exponent_range(90, 33);  // lengths 1..32, 32
    const auto code = test::canonical_code(test::unary_lengths(symbols));
    cases.push_back(
        hand("hand: deepest code, every length", code, uniform_over(symbols, 60000, 21)));
  }
  for (uint8_t length : {5, 8, 9, 13, 17, 31}) {
    const int count = length < 8 ? (1 << length) : length == 9 ? 32 : length == 17 ? 16 : 200;
    const auto symbols = exponent_range(20, count);
    test::CodeLengths len{};
    for (uint8_t s : symbols) len[s] = length;
    cases.push_back(hand("hand: fixed length " + std::to_string(length), test::canonical_code(len),
                         uniform_over(symbols, 30000 + length, length)));
  }
  {
    test::CodeLengths len{};
    len[0] = 1;
    const auto code = test::canonical_code(len);
    testing::TestRng rng(3);
    for (uint64_t n :
         {1ull, 63ull, 64ull, 65ull, 32767ull, 32768ull, 32769ull, 65537ull, 3 * 32768ull + 100}) {
      std::vector<uint16_t> w(n);
      for (auto& x : w) x = (rng.next() & 1) ? 0x8000 : 0x0000;
      cases.push_back(hand("hand: 1-bit code n=" + std::to_string(n), code, std::move(w)));
    }
  }
  {
    test::CodeLengths len{};
    len[1] = 1;
    len[2] = 20;
    len[3] = 20;
    std::vector<uint16_t> w(32761, uint16_t{1} << 7);
    w.back() = uint16_t{3} << 7;
    cases.push_back(hand("hand: empty last block", test::canonical_code(len), std::move(w)));
  }
  {
    // The official encoder's EOF symbol: entries that decode no exponent, padding that is a
    // prefix of the EOF code.
    std::vector<uint8_t> symbols = exponent_range(100, 31);
    const auto code = test::canonical_code(test::unary_lengths(symbols));
    const uint8_t eof = 130;
    symbols.pop_back();
    Case c = hand("hand: official EOF entries", code, uniform_over(symbols, 3001, 12));
    uint8_t* row3 = c.group.luts.data() + 3 * 256;
    for (int i = 252; i < 256; ++i) row3[i] = c.group.luts[2 * 256 + 255];
    c.group.luts[4 * 256 + eof] = 0;
    uint64_t end_bit = 0;
    for (uint16_t w : c.weights) end_bit += code.length[test::exponent_of(w)];
    if (end_bit % 8 != 0) {
      c.group.encoded_exponent.back() |= static_cast<uint8_t>(0xFF >> (end_bit % 8));
    }
    cases.push_back(std::move(c));
  }
  if (large) {
    cases.push_back(encoded(
        "llama-like 4 members, 6M weights",
        {gaussian_bf16(1024 * 2048, 0.5 / 45, 31), gaussian_bf16(256 * 2048, 0.5 / 45, 32),
         gaussian_bf16(256 * 2048, 0.5 / 45, 33), gaussian_bf16(1024 * 2048, 0.5 / 45, 34)}));
    cases.push_back(encoded("geometric 6M", {geometric_exponents(6000000, 30, 48, 35)}));
  }
  return cases;
}

// A corruption of a valid group and whether the stream it leaves is still consistent.
struct Corruption {
  std::string name;
  std::function<void(GroupBuffers&, testing::TestRng&)> apply;
};

// Corruptions that validate_group cannot see (they touch the stream and the gaps), so the
// decoders must find them while decoding, or decode a different but consistent stream.
inline std::vector<Corruption> stream_corruptions() {
  return {
      {"flip one stream bit",
       [](GroupBuffers& g, testing::TestRng& rng) {
         const uint64_t bit = rng.below(8 * g.encoded_exponent.size());
         g.encoded_exponent[bit / 8] ^= static_cast<uint8_t>(0x80u >> (bit % 8));
       }},
      {"change one gap field",
       [](GroupBuffers& g, testing::TestRng& rng) {
         const uint64_t windows = 8 * g.gaps.size() / kGapBits;
         const uint64_t w = rng.below(windows);
         test::write_gap(g.gaps, w, (read_gap(g.gaps, w) + 1 + rng.below(31)) % 32);
       }},
      {"random stream byte",
       [](GroupBuffers& g, testing::TestRng& rng) {
         g.encoded_exponent[rng.below(g.encoded_exponent.size())] =
             static_cast<uint8_t>(rng.next());
       }},
      {"stream shifted by one byte",
       [](GroupBuffers& g, testing::TestRng&) {
         if (g.encoded_exponent.size() > 1) {
           std::rotate(g.encoded_exponent.begin(), g.encoded_exponent.begin() + 1,
                       g.encoded_exponent.end());
         }
       }},
      {"all gaps random",
       [](GroupBuffers& g, testing::TestRng& rng) {
         for (auto& b : g.gaps) b = static_cast<uint8_t>(rng.next());
       }},
  };
}

}  // namespace df11::cuda_test
