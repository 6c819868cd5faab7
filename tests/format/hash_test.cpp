// Hashes against published / independently computed vectors. Expected values come from
// Python's hashlib and the `xxhash` package (xxh3_64_hexdigest), not from this code.
#include "df11/hash.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "df11/file_io.h"
#include "df11/sha256.h"
#include "format_test_util.h"
#include "xxh3_kernels.h"

namespace df11 {
namespace {

using test::as_bytes;

const std::string kFox = "The quick brown fox jumps over the lazy dog";

std::string pattern_1280() {  // bytes(range(256)) * 5
  std::string s;
  for (int r = 0; r < 5; ++r) {
    for (int i = 0; i < 256; ++i) s += static_cast<char>(i);
  }
  return s;
}

TEST(Hash, Xxh3Vectors) {
  EXPECT_EQ(xxh3_hex(as_bytes("")), "2d06800538d394c2");
  EXPECT_EQ(xxh3_hex(as_bytes("abc")), "78af5f94892f3950");
  EXPECT_EQ(xxh3_hex(as_bytes(kFox)), "ce7d19a5418fb365");
  EXPECT_EQ(xxh3_hex(as_bytes(pattern_1280())), "4844b009e164352e");
  EXPECT_EQ(xxh3_64(as_bytes("abc")), 0x78af5f94892f3950ull);
  EXPECT_EQ(hex64(0x1), "0000000000000001");
}

TEST(Hash, Sha256Vectors) {
  EXPECT_EQ(sha256_hex(as_bytes("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex(as_bytes("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(as_bytes(kFox)),
            "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592");
  EXPECT_EQ(sha256_hex(as_bytes(pattern_1280())),
            "d414b085826eb06778483ba35564dc849e643359f69ed9747878ba6e54985bed");
}

TEST(Hash, IncrementalEqualsOneShotForEverySplit) {
  const std::string data = pattern_1280();
  for (size_t split : {size_t{0}, size_t{1}, size_t{63}, size_t{240}, size_t{1000}, data.size()}) {
    Xxh3 x;
    Sha256 s;
    x.update(as_bytes(std::string_view(data).substr(0, split)));
    s.update(as_bytes(std::string_view(data).substr(0, split)));
    EXPECT_EQ(x.hex_digest(), xxh3_hex(as_bytes(std::string_view(data).substr(0, split))));
    x.update(as_bytes(std::string_view(data).substr(split)));
    s.update(as_bytes(std::string_view(data).substr(split)));
    EXPECT_EQ(x.hex_digest(), "4844b009e164352e") << split;
    EXPECT_EQ(s.hex_digest(), "d414b085826eb06778483ba35564dc849e643359f69ed9747878ba6e54985bed")
        << split;
  }
  Xxh3 x;
  x.update(as_bytes("junk"));
  x.reset();
  x.update(as_bytes("abc"));
  EXPECT_EQ(x.hex_digest(), "78af5f94892f3950");
  Sha256 s;
  s.update(as_bytes("junk"));
  s.reset();
  s.update(as_bytes("abc"));
  EXPECT_EQ(s.hex_digest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Moved-from hashers start again from empty.
  Xxh3 moved = std::move(x);
  EXPECT_EQ(moved.hex_digest(), "78af5f94892f3950");
  Sha256 moved_s = std::move(s);
  EXPECT_EQ(moved_s.hex_digest(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// The AVX-512 kernel (used where the CPU has it) against Debian's libxxhash, on inputs long
// enough for every part of XXH3's long-input path (stripes, blocks, the last partial stripe),
// one-shot and in uneven pieces.
TEST(Hash, Xxh3Avx512KernelEqualsLibxxhash) {
  if (!detail::xxh3_avx512_usable()) GTEST_SKIP() << "no AVX-512F on this CPU (or build)";
  std::mt19937_64 rng(11);
  std::vector<uint8_t> data(3 << 20);
  for (uint8_t& b : data) b = static_cast<uint8_t>(rng());
  for (size_t size : {size_t{0}, size_t{1}, size_t{129}, size_t{241}, size_t{1025}, size_t{4096},
                      size_t{65537}, size_t{1 << 20}, data.size()}) {
    const uint64_t expected = XXH3_64bits(data.data(), size);
    EXPECT_EQ(detail::xxh3_64_avx512(data.data(), size), expected) << size;
    XXH3_state_t* state = XXH3_createState();
    ASSERT_NE(state, nullptr);
    XXH3_64bits_reset(state);
    for (size_t at = 0; at < size;) {
      const size_t piece = std::min<size_t>(size - at, 1 + rng() % 300000);
      detail::xxh3_update_avx512(state, data.data() + at, piece);
      at += piece;
    }
    EXPECT_EQ(XXH3_64bits_digest(state), expected) << size;
    XXH3_freeState(state);
    Xxh3 x;  // the public class, which dispatches to the same kernel
    x.update(std::span<const uint8_t>(data.data(), size));
    EXPECT_EQ(x.digest(), expected) << size;
  }
}

TEST(Hash, Sha256File) {
  test::ScratchDir dir;
  ASSERT_TRUE(write_file_atomic(dir.file("fox"), std::string_view(kFox)).is_ok());
  ASSERT_TRUE(write_file_atomic(dir.file("empty"), std::string_view()).is_ok());
  Result<std::string> h = sha256_file(dir.file("fox"));
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  EXPECT_EQ(*h, "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592");
  h = sha256_file(dir.file("empty"));
  ASSERT_TRUE(h.is_ok());
  EXPECT_EQ(*h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_STATUS(sha256_file(dir.file("none")).status(), ErrorCode::kNotFound, "none",
                "No such file");
  EXPECT_STATUS(sha256_file(dir.path().string()).status(), ErrorCode::kIo, "not a regular file");
}

TEST(Hash, IsLowerHex) {
  EXPECT_TRUE(is_lower_hex("0123456789abcdef", 16));
  EXPECT_FALSE(is_lower_hex("0123456789ABCDEF", 16));
  EXPECT_FALSE(is_lower_hex("0123456789abcde", 16));
  EXPECT_FALSE(is_lower_hex("0123456789abcdeg", 16));
  EXPECT_TRUE(is_lower_hex("", 0));
}

}  // namespace
}  // namespace df11
