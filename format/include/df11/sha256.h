// SHA-256 per file (spec 5.2: `sources` and side files), the proof that decompression
// restores the original bytes exactly. Library df11_sha256, apart from df11_format so that a
// program that only parses containers does not link libcrypto; OpenSSL stays out of this
// header.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "df11/hash.h"  // kSha256HexLength
#include "df11/status.h"

namespace df11 {

// SHA-256 as 64 lowercase hex digits.
std::string sha256_hex(std::span<const uint8_t> bytes);

// Incremental SHA-256 (OpenSSL EVP). Move-only; not thread-safe.
// A failure inside OpenSSL (only possible when it cannot allocate) aborts the process with a
// message: there is no meaningful way to continue hashing.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::span<const uint8_t> bytes);
  std::string hex_digest() const;  // does not end the stream: more updates may follow
  void reset();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// SHA-256 of a whole file, read in chunks (nothing stays resident). kNotFound / kIo name
// the file (a directory fails with kIo "Is a directory").
Result<std::string> sha256_file(const std::string& path);

}  // namespace df11
