// XXH3's default secret, read from xxHash's header in inline mode (the only way its header
// exposes it): the bytes XXH3_64bits uses, whatever version of libxxhash is installed.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "df11/hash.h"

namespace df11 {

static_assert(sizeof(XXH3_kSecret) == kXxh3SecretBytes);

std::span<const uint8_t, kXxh3SecretBytes> xxh3_default_secret() {
  return std::span<const uint8_t, kXxh3SecretBytes>(XXH3_kSecret, kXxh3SecretBytes);
}

}  // namespace df11
