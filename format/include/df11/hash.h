// Checksums: XXH3-64 per tensor (df11 metadata, spec 5.2). SHA-256 per file lives in
// df11/sha256.h (library df11_sha256), so that df11_format needs no libcrypto. xxHash stays
// out of this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "df11/status.h"

namespace df11 {

inline constexpr size_t kXxh3HexLength = 16;    // 64-bit digest as lowercase hex
inline constexpr size_t kSha256HexLength = 64;  // 256-bit digest as lowercase hex

// XXH3_64bits (seed 0) of the bytes.
uint64_t xxh3_64(std::span<const uint8_t> bytes);
// XXH3's default secret (its 192 bytes, XXH3_kSecret of the xxHash specification), for
// implementations of XXH3_64bits outside libxxhash (the GPU's, decoder/cuda).
inline constexpr size_t kXxh3SecretBytes = 192;
std::span<const uint8_t, kXxh3SecretBytes> xxh3_default_secret();
// The same as 16 lowercase hex digits, most significant first ("2d06800538d394c2" for "").
std::string xxh3_hex(std::span<const uint8_t> bytes);
// 16 lowercase hex digits of a 64-bit digest.
std::string hex64(uint64_t digest);

// Incremental XXH3_64bits: update() in pieces gives the digest of the concatenation.
// Move-only; not thread-safe.
class Xxh3 {
 public:
  Xxh3();
  ~Xxh3();
  Xxh3(Xxh3&&) noexcept;
  Xxh3& operator=(Xxh3&&) noexcept;
  Xxh3(const Xxh3&) = delete;
  Xxh3& operator=(const Xxh3&) = delete;

  void update(std::span<const uint8_t> bytes);
  uint64_t digest() const;  // does not end the stream: more updates may follow
  std::string hex_digest() const { return hex64(digest()); }
  void reset();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// True if `s` is exactly `length` lowercase hex digits.
bool is_lower_hex(std::string_view s, size_t length);

}  // namespace df11
