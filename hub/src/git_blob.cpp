#include "git_blob.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>

namespace df11::hub {

std::string git_blob_id(std::string_view content) {
  const std::string head = "blob " + std::to_string(content.size()) + std::string(1, '\0');
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (ctx == nullptr || EVP_DigestInit_ex(ctx, EVP_sha1(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx, head.data(), head.size()) != 1 ||
      EVP_DigestUpdate(ctx, content.data(), content.size()) != 1 ||
      EVP_DigestFinal_ex(ctx, digest, &length) != 1) {
    // As df11/sha256.h: only an allocation failure inside OpenSSL gets here.
    std::fputs("df11: OpenSSL SHA-1 failed\n", stderr);
    std::abort();
  }
  EVP_MD_CTX_free(ctx);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

}  // namespace df11::hub
