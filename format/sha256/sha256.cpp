#include "df11/sha256.h"

#include <fcntl.h>
#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>

#include "posix_file.h"

namespace df11 {

struct Sha256::State {
  EVP_MD_CTX* ctx = nullptr;
};

namespace {

[[noreturn]] void openssl_failed(const char* what) {
  std::fprintf(stderr, "df11: OpenSSL SHA-256 %s failed\n", what);
  std::abort();
}

EVP_MD_CTX* new_context() {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == nullptr) openssl_failed("context allocation");
  if (EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1) openssl_failed("init");
  return ctx;
}

std::string to_hex(const unsigned char* digest, unsigned int length) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * length, '0');
  for (unsigned int i = 0; i < length; ++i) {
    out[2 * i] = kDigits[digest[i] >> 4];
    out[2 * i + 1] = kDigits[digest[i] & 0xf];
  }
  return out;
}

// sha256_file reads this much per read() call.
constexpr size_t kHashChunkBytes = size_t{4} << 20;

}  // namespace

Sha256::Sha256() : state_(std::make_unique<State>()) { state_->ctx = new_context(); }

Sha256::~Sha256() {
  if (state_ != nullptr) EVP_MD_CTX_free(state_->ctx);
}

Sha256::Sha256(Sha256&&) noexcept = default;

Sha256& Sha256::operator=(Sha256&& other) noexcept {
  if (this != &other) {
    if (state_ != nullptr) EVP_MD_CTX_free(state_->ctx);
    state_ = std::move(other.state_);
  }
  return *this;
}

void Sha256::update(std::span<const uint8_t> bytes) {
  if (state_ == nullptr) reset();
  if (EVP_DigestUpdate(state_->ctx, bytes.data(), bytes.size()) != 1) openssl_failed("update");
}

std::string Sha256::hex_digest() const {
  // Finalize a copy so that the stream can go on.
  EVP_MD_CTX* copy = EVP_MD_CTX_new();
  if (copy == nullptr) openssl_failed("context allocation");
  if (state_ == nullptr) {
    if (EVP_DigestInit_ex(copy, EVP_sha256(), nullptr) != 1) openssl_failed("init");
  } else if (EVP_MD_CTX_copy_ex(copy, state_->ctx) != 1) {
    openssl_failed("copy");
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(copy, digest, &length) != 1) openssl_failed("final");
  EVP_MD_CTX_free(copy);
  return to_hex(digest, length);
}

void Sha256::reset() {
  if (state_ == nullptr) {
    state_ = std::make_unique<State>();
    state_->ctx = new_context();
  } else if (EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr) != 1) {
    openssl_failed("init");
  }
}

std::string sha256_hex(std::span<const uint8_t> bytes) {
  Sha256 h;
  h.update(bytes);
  return h.hex_digest();
}

Result<std::string> sha256_file(const std::string& path) {
  // read(), not mmap: a file truncated while it is hashed gives an error, not SIGBUS, and
  // nothing stays resident in this process.
  DF11_ASSIGN_OR_RETURN(detail::OpenedFile file, detail::open_regular_file(path));
  (void)posix_fadvise(file.fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  Sha256 h;
  DF11_RETURN_IF_ERROR(detail::read_all_chunks(file.fd.get(), path, kHashChunkBytes,
                                               [&](std::span<const uint8_t> chunk) {
                                                 h.update(chunk);
                                                 return Status::ok();
                                               }));
  return h.hex_digest();
}

}  // namespace df11
