// XXH3_64bits (seed 0, the default secret) split so that a GPU computes it over large inputs,
// written once for two compilers: the kernel (xxh3_kernel.cu) and the host emulation
// (xxh3_emulation.cpp, tested against libxxhash without a GPU) include this file.
//
// Above 240 bytes, XXH3 runs 8 64-bit accumulators over 1,024-byte blocks: each block adds
// to accumulator L, for each of its 16 stripes s of 64 bytes, the stripe's word L ^ 1 and the
// 32 x 32-bit product of the halves of word L xor'ed with the secret's word s + L; then every
// accumulator is scrambled (a shift, an xor with the secret and a multiply). The additions of
// one block commute, so each block's eight sums are computed in parallel (xxh3_block_sum),
// and only the scrambles run in order (xxh3_scramble), one chain per accumulator. The last
// partial block, the last stripe and the merge (xxh3_long_finish) and the short inputs
// (xxh3_short) are sequential and read their bytes one at a time (any alignment).
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define DF11_XXH3_HD __host__ __device__ __forceinline__
#else
#define DF11_XXH3_HD inline
#endif

namespace df11::cuda::detail {

constexpr uint64_t kXxh3Prime32_1 = 0x9E3779B1u;
constexpr uint64_t kXxh3Prime32_2 = 0x85EBCA77u;
constexpr uint64_t kXxh3Prime32_3 = 0xC2B2AE3Du;
constexpr uint64_t kXxh3Prime64_1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kXxh3Prime64_2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kXxh3Prime64_3 = 0x165667B19E3779F9ull;
constexpr uint64_t kXxh3Prime64_4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kXxh3Prime64_5 = 0x27D4EB2F165667C5ull;
constexpr uint64_t kXxh3Mix1 = 0x165667919E3779F9ull;
constexpr uint64_t kXxh3Mix2 = 0x9FB21C651E98DF25ull;

constexpr size_t kXxh3SecretSize = 192;
constexpr size_t kXxh3Stripe = 64;
constexpr size_t kXxh3StripesPerBlock = (kXxh3SecretSize - kXxh3Stripe) / 8;  // 16
constexpr size_t kXxh3Block = kXxh3Stripe * kXxh3StripesPerBlock;             // 1,024 bytes
constexpr size_t kXxh3ShortMax = 240;  // longer inputs take the block path
constexpr size_t kXxh3Lanes = 8;

DF11_XXH3_HD uint64_t xxh3_read64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

DF11_XXH3_HD uint32_t xxh3_read32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

DF11_XXH3_HD uint64_t xxh3_rotl(uint64_t v, int r) { return v << r | v >> (64 - r); }

DF11_XXH3_HD uint64_t xxh3_swap64(uint64_t v) {
  uint64_t r = 0;
  for (int i = 0; i < 8; ++i) r = r << 8 | (v >> (8 * i) & 0xFF);
  return r;
}

// The 128-bit product of a and b, its halves xor'ed.
DF11_XXH3_HD uint64_t xxh3_mul_fold(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return (a * b) ^ __umul64hi(a, b);
#else
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
#endif
}

DF11_XXH3_HD uint64_t xxh3_avalanche(uint64_t h) {
  h ^= h >> 37;
  h *= kXxh3Mix1;
  return h ^ (h >> 32);
}

DF11_XXH3_HD uint64_t xxh64_avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kXxh3Prime64_2;
  h ^= h >> 29;
  h *= kXxh3Prime64_3;
  return h ^ (h >> 32);
}

DF11_XXH3_HD uint64_t xxh3_rrmxmx(uint64_t h, uint64_t len) {
  h ^= xxh3_rotl(h, 49) ^ xxh3_rotl(h, 24);
  h *= kXxh3Mix2;
  h ^= (h >> 35) + len;
  h *= kXxh3Mix2;
  return h ^ (h >> 28);
}

DF11_XXH3_HD uint64_t xxh3_mix16(const uint8_t* in, const uint8_t* secret) {
  return xxh3_mul_fold(xxh3_read64(in) ^ xxh3_read64(secret),
                       xxh3_read64(in + 8) ^ xxh3_read64(secret + 8));
}

// XXH3_64bits of len <= 240 bytes.
DF11_XXH3_HD uint64_t xxh3_short(const uint8_t* in, size_t len, const uint8_t* secret) {
  if (len == 0) return xxh64_avalanche(xxh3_read64(secret + 56) ^ xxh3_read64(secret + 64));
  if (len < 4) {
    const uint32_t combined = uint32_t{in[0]} << 16 | uint32_t{in[len >> 1]} << 24 |
                              uint32_t{in[len - 1]} | static_cast<uint32_t>(len) << 8;
    const uint64_t flip = xxh3_read32(secret) ^ xxh3_read32(secret + 4);
    return xxh64_avalanche(uint64_t{combined} ^ flip);
  }
  if (len <= 8) {
    const uint64_t flip = xxh3_read64(secret + 8) ^ xxh3_read64(secret + 16);
    const uint64_t v = xxh3_read32(in + len - 4) + (uint64_t{xxh3_read32(in)} << 32);
    return xxh3_rrmxmx(v ^ flip, len);
  }
  if (len <= 16) {
    const uint64_t lo = xxh3_read64(in) ^ (xxh3_read64(secret + 24) ^ xxh3_read64(secret + 32));
    const uint64_t hi =
        xxh3_read64(in + len - 8) ^ (xxh3_read64(secret + 40) ^ xxh3_read64(secret + 48));
    return xxh3_avalanche(len + xxh3_swap64(lo) + hi + xxh3_mul_fold(lo, hi));
  }
  uint64_t acc = len * kXxh3Prime64_1;
  if (len <= 128) {
    if (len > 32) {
      if (len > 64) {
        if (len > 96) {
          acc += xxh3_mix16(in + 48, secret + 96);
          acc += xxh3_mix16(in + len - 64, secret + 112);
        }
        acc += xxh3_mix16(in + 32, secret + 64);
        acc += xxh3_mix16(in + len - 48, secret + 80);
      }
      acc += xxh3_mix16(in + 16, secret + 32);
      acc += xxh3_mix16(in + len - 32, secret + 48);
    }
    acc += xxh3_mix16(in, secret);
    acc += xxh3_mix16(in + len - 16, secret + 16);
    return xxh3_avalanche(acc);
  }
  for (size_t i = 0; i < 8; ++i) acc += xxh3_mix16(in + 16 * i, secret + 16 * i);
  acc = xxh3_avalanche(acc);
  for (size_t i = 8; i < len / 16; ++i) acc += xxh3_mix16(in + 16 * i, secret + 16 * (i - 8) + 3);
  acc += xxh3_mix16(in + len - 16, secret + 136 - 17);
  return xxh3_avalanche(acc);
}

// The accumulators' starting values.
DF11_XXH3_HD uint64_t xxh3_initial(size_t lane) {
  constexpr uint64_t kInit[kXxh3Lanes] = {kXxh3Prime32_3, kXxh3Prime64_1, kXxh3Prime64_2,
                                          kXxh3Prime64_3, kXxh3Prime64_4, kXxh3Prime32_2,
                                          kXxh3Prime64_5, kXxh3Prime32_1};
  return kInit[lane];
}

// One stripe's addition to accumulator `lane`, from the stripe's words `lane` and `lane ^ 1`
// and the secret's word at `key`.
DF11_XXH3_HD uint64_t xxh3_stripe_term(uint64_t word, uint64_t pair_word, uint64_t key) {
  const uint64_t k = word ^ key;
  return pair_word + (k & 0xFFFFFFFFu) * (k >> 32);
}

// Blocks' 8-byte words as the GPU reads them: two words at once, 16-byte aligned.
struct Xxh3Pair {
  uint64_t even, odd;
};

// The secret's words accumulator `lane` meets in a block: keys[s] for stripe s.
DF11_XXH3_HD void xxh3_lane_keys(const uint8_t* secret, size_t lane,
                                 uint64_t (&keys)[kXxh3StripesPerBlock]) {
  for (size_t s = 0; s < kXxh3StripesPerBlock; ++s) keys[s] = xxh3_read64(secret + 8 * (s + lane));
}

// What a whole block adds to accumulator `lane` before the block's scramble. `load(i)` gives
// the block's words 2i and 2i + 1 (i < 128); `keys` are the lane's (xxh3_lane_keys).
template <typename Load>
DF11_XXH3_HD uint64_t xxh3_block_sum(Load&& load, size_t lane,
                                     const uint64_t (&keys)[kXxh3StripesPerBlock]) {
  uint64_t sum = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (size_t s = 0; s < kXxh3StripesPerBlock; ++s) {
    const Xxh3Pair w = load(s * (kXxh3Lanes / 2) + lane / 2);
    const uint64_t mine = lane % 2 == 0 ? w.even : w.odd;
    const uint64_t pair = lane % 2 == 0 ? w.odd : w.even;
    sum += xxh3_stripe_term(mine, pair, keys[s]);
  }
  return sum;
}

// Accumulator `acc` after a block that added `sum` to it: the block's scramble. `key` is the
// secret's word `lane` of its last 64 bytes (xxh3_scramble_key).
DF11_XXH3_HD uint64_t xxh3_scramble(uint64_t acc, uint64_t sum, uint64_t key) {
  acc += sum;
  acc ^= acc >> 47;
  acc ^= key;
  return acc * kXxh3Prime32_1;
}

DF11_XXH3_HD uint64_t xxh3_scramble_key(const uint8_t* secret, size_t lane) {
  return xxh3_read64(secret + kXxh3SecretSize - kXxh3Stripe + 8 * lane);
}

// Full blocks of an input of len > 240 bytes (the last block, whole or not, is the finish's).
DF11_XXH3_HD uint64_t xxh3_full_blocks(uint64_t len) { return (len - 1) / kXxh3Block; }

// XXH3_64bits of `in` (len > 240 bytes) from the accumulators after its full blocks.
DF11_XXH3_HD uint64_t xxh3_long_finish(uint64_t (&acc)[kXxh3Lanes], const uint8_t* in, uint64_t len,
                                       const uint8_t* secret) {
  const uint64_t done = xxh3_full_blocks(len) * kXxh3Block;
  const uint64_t stripes = (len - 1 - done) / kXxh3Stripe;
  for (uint64_t s = 0; s < stripes; ++s) {
    const uint8_t* p = in + done + s * kXxh3Stripe;
    for (size_t l = 0; l < kXxh3Lanes; ++l) {
      acc[l] += xxh3_stripe_term(xxh3_read64(p + 8 * l), xxh3_read64(p + 8 * (l ^ 1)),
                                 xxh3_read64(secret + 8 * (s + l)));
    }
  }
  const uint8_t* last = in + len - kXxh3Stripe;
  const uint8_t* last_key = secret + kXxh3SecretSize - kXxh3Stripe - 7;
  for (size_t l = 0; l < kXxh3Lanes; ++l) {
    acc[l] += xxh3_stripe_term(xxh3_read64(last + 8 * l), xxh3_read64(last + 8 * (l ^ 1)),
                               xxh3_read64(last_key + 8 * l));
  }
  uint64_t h = len * kXxh3Prime64_1;
  for (size_t i = 0; i < 4; ++i) {
    h += xxh3_mul_fold(acc[2 * i] ^ xxh3_read64(secret + 11 + 16 * i),
                       acc[2 * i + 1] ^ xxh3_read64(secret + 11 + 16 * i + 8));
  }
  return xxh3_avalanche(h);
}

}  // namespace df11::cuda::detail
