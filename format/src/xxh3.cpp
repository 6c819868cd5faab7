#include <xxhash.h>

#include <cstdio>
#include <cstdlib>

#include "df11/hash.h"
#include "xxh3_kernels.h"

namespace df11 {

struct Xxh3::State {
  XXH3_state_t* s = nullptr;
};

namespace {

XXH3_state_t* new_state() {
  XXH3_state_t* s = XXH3_createState();
  if (s == nullptr || XXH3_64bits_reset(s) != XXH_OK) {
    std::fputs("df11: out of memory creating an XXH3 state\n", stderr);
    std::abort();
  }
  return s;
}

}  // namespace

namespace detail {

bool xxh3_avx512_usable() {
#if defined(DF11_XXH3_AVX512)
  static const bool usable = __builtin_cpu_supports("avx512f");
  return usable;
#else
  return false;
#endif
}

#if !defined(DF11_XXH3_AVX512)
void xxh3_update_avx512(void*, const uint8_t*, size_t) { std::abort(); }
uint64_t xxh3_64_avx512(const uint8_t*, size_t) { std::abort(); }
#endif

}  // namespace detail

uint64_t xxh3_64(std::span<const uint8_t> bytes) {
  if (detail::xxh3_avx512_usable()) return detail::xxh3_64_avx512(bytes.data(), bytes.size());
  return XXH3_64bits(bytes.data(), bytes.size());
}

std::string hex64(uint64_t digest) {
  char buf[kXxh3HexLength + 1];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(digest));
  return std::string(buf, kXxh3HexLength);
}

std::string xxh3_hex(std::span<const uint8_t> bytes) { return hex64(xxh3_64(bytes)); }

Xxh3::Xxh3() : state_(std::make_unique<State>()) { state_->s = new_state(); }

Xxh3::~Xxh3() {
  if (state_ != nullptr) XXH3_freeState(state_->s);
}

Xxh3::Xxh3(Xxh3&&) noexcept = default;

Xxh3& Xxh3::operator=(Xxh3&& other) noexcept {
  if (this != &other) {
    if (state_ != nullptr) XXH3_freeState(state_->s);
    state_ = std::move(other.state_);
  }
  return *this;
}

void Xxh3::update(std::span<const uint8_t> bytes) {
  if (state_ == nullptr) {  // moved-from: start again
    state_ = std::make_unique<State>();
    state_->s = new_state();
  }
  if (detail::xxh3_avx512_usable()) {
    detail::xxh3_update_avx512(state_->s, bytes.data(), bytes.size());
  } else {
    XXH3_64bits_update(state_->s, bytes.data(), bytes.size());
  }
}

uint64_t Xxh3::digest() const {
  return state_ == nullptr ? XXH3_64bits(nullptr, 0) : XXH3_64bits_digest(state_->s);
}

void Xxh3::reset() {
  if (state_ == nullptr) {
    state_ = std::make_unique<State>();
    state_->s = new_state();
  } else {
    XXH3_64bits_reset(state_->s);
  }
}

bool is_lower_hex(std::string_view s, size_t length) {
  if (s.size() != length) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace df11
