// Every valid vector of spec/vectors/valid (spec/DF11.md section 9) through df11: read,
// validate, decode with both CPU decoders (whole and in ranges), compare bit for bit with the
// expected output, check the member checksums, rebuild the original file (spec 7.6) and
// re-encode (byte-identical for canonical vectors, spec 2.3).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "df11/checked_math.h"
#include "df11/decoder.h"
#include "df11/encoder.h"
#include "df11/hash.h"
#include "df11/sha256.h"
#include "spec_pipeline.h"
#include "spec_vectors.h"

namespace df11::test {
namespace {

class ValidVector : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    name_ = GetParam();
    json_ = read_spec_json("valid", name_);
    ASSERT_TRUE(json_.is_object()) << name_ << ".json";
    expected_bytes_ = read_spec_file(spec_vector_path("valid", name_, ".expected.bin"));
    expected_ = bf16_from_le_bytes(expected_bytes_);
    const StageStatus loaded =
        load_shard(spec_vector_path("valid", name_, ".safetensors"), &shard_);
    ASSERT_TRUE(loaded.status.is_ok()) << loaded.stage << ": " << loaded.status.to_string();
    ASSERT_EQ(shard_->groups.size(), 1u);
    ASSERT_EQ(shard_->groups[0].name, json_.at("group").get<std::string>());
  }

  std::string name_;
  nlohmann::json json_;
  std::vector<uint8_t> expected_bytes_;
  std::vector<uint16_t> expected_;
  std::unique_ptr<LoadedShard> shard_;
};

TEST_P(ValidVector, ExpectedOutputMatchesItsDescription) {
  EXPECT_EQ(expected_bytes_.size(), 2 * json_.at("n_elements").get<uint64_t>());
  EXPECT_EQ(sha256_hex(expected_bytes_), json_.at("sha256_of_expected").get<std::string>());
  EXPECT_EQ(shard_->metadata.groups[0].n_elements, expected_.size());
}

TEST_P(ValidVector, ValidatesAndDecodesBitExact) {
  const GroupView view = shard_->view(0);
  const std::string what = shard_->what(0);
  Result<GroupInfo> info = validate_group(view, what);
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->n_elements, expected_.size());

  std::vector<uint16_t> out(expected_.size(), 0xFFFF);
  const Status ref = decode_group_reference(view, out, what);
  ASSERT_TRUE(ref.is_ok()) << ref.to_string();
  EXPECT_TRUE(out == expected_) << "decode_group_reference differs from " << name_
                                << ".expected.bin";

  std::fill(out.begin(), out.end(), 0xFFFF);
  const Status fast = decode_group(view, out, what);
  ASSERT_TRUE(fast.is_ok()) << fast.to_string();
  EXPECT_TRUE(out == expected_) << "decode_group differs from " << name_ << ".expected.bin";
  EXPECT_EQ(sha256_hex(le_bytes_from_bf16(out)), json_.at("sha256_of_expected"));
}

// spec 4.3: any range of weights decodes alone, from the blocks that hold it.
TEST_P(ValidVector, DecodesRanges) {
  const GroupView view = shard_->view(0);
  const uint64_t n = expected_.size();
  const std::pair<uint64_t, uint64_t> ranges[] = {
      {0, 1}, {n - 1, n}, {n / 3, n - n / 3}, {n / 2, n}, {0, (n + 1) / 2}};
  for (const auto& [first, last] : ranges) {
    if (last <= first) continue;
    std::vector<uint16_t> out(last - first, 0xFFFF);
    const Status s = decode_group(view, out, shard_->what(0), first);
    ASSERT_TRUE(s.is_ok()) << "[" << first << ", " << last << "): " << s.to_string();
    EXPECT_TRUE(std::equal(out.begin(), out.end(), expected_.begin() + first))
        << "range [" << first << ", " << last << ")";
  }
}

// spec 5.2: member xxh3 is over the original bytes, which decoding restores.
TEST_P(ValidVector, MemberChecksumsMatchDecodedBytes) {
  uint64_t offset = 0;
  for (const MemberMeta& m : shard_->metadata.groups[0].members) {
    ASSERT_LE(offset + m.n_elements, expected_.size());
    const std::span<const uint8_t> bytes(expected_bytes_.data() + 2 * offset, 2 * m.n_elements);
    EXPECT_EQ(xxh3_hex(bytes), m.xxh3) << "member " << m.name;
    offset += m.n_elements;
  }
  EXPECT_EQ(offset, expected_.size());
}

// spec 7.6: the source's header plus the decoded members and the raw tensors rebuild the
// original file, whose size and SHA-256 the metadata records.
TEST_P(ValidVector, RestoresTheOriginalFileByteForByte) {
  ASSERT_EQ(shard_->metadata.sources.size(), 1u);
  const SourceFile& src = shard_->metadata.sources[0];
  EXPECT_EQ(src.file, shard_->file_name);
  ASSERT_GE(src.size, kHeaderLengthBytes + src.header.size());
  std::vector<uint8_t> original(src.size, 0);
  store_le64(original.data(), src.header.size());
  std::memcpy(original.data() + kHeaderLengthBytes, src.header.data(), src.header.size());
  Result<SafetensorsHeader> h = parse_safetensors(original, src.file);
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();

  const GroupMeta& group = shard_->metadata.groups[0];
  for (const TensorInfo& t : h->tensors) {
    std::span<const uint8_t> bytes;
    uint64_t offset = 0;
    for (const MemberMeta& m : group.members) {
      if (m.name == t.name) {
        bytes = std::span<const uint8_t>(expected_bytes_).subspan(2 * offset, 2 * m.n_elements);
      }
      offset += m.n_elements;
    }
    if (bytes.empty() && t.byte_size() != 0) {
      const TensorInfo* raw = shard_->header.find(t.name);
      ASSERT_NE(raw, nullptr) << "tensor '" << t.name << "' is neither a member nor stored raw";
      bytes = std::span<const uint8_t>(shard_->bytes).subspan(raw->file_offset, raw->byte_size());
    }
    ASSERT_EQ(bytes.size(), t.byte_size()) << t.name;
    if (!bytes.empty()) std::memcpy(original.data() + t.file_offset, bytes.data(), bytes.size());
  }
  EXPECT_EQ(sha256_hex(original), src.sha256);
}

// spec 2.3: df11's encoder, given the decoded weights, writes a valid group; for canonical
// vectors exactly the vector's six tensors.
TEST_P(ValidVector, ReencodesToTheSameGroup) {
  std::vector<std::span<const uint16_t>> members;
  uint64_t offset = 0;
  for (const MemberMeta& m : shard_->metadata.groups[0].members) {
    members.push_back(std::span<const uint16_t>(expected_).subspan(offset, m.n_elements));
    offset += m.n_elements;
  }
  Result<GroupBuffers> encoded = encode_group(members);
  ASSERT_TRUE(encoded.is_ok()) << encoded.status().to_string();
  const GroupView mine = encoded->view();

  std::vector<uint16_t> out(expected_.size(), 0xFFFF);
  const Status s = decode_group_reference(mine, out, name_ + " re-encoded");
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_TRUE(out == expected_) << "the re-encoded group decodes differently";

  // spec 2.3: df11's code SHOULD be (and is meant to be) optimal, so never longer than the
  // vector's, whatever valid code the vector uses.
  const GroupView theirs = shard_->view(0);
  EXPECT_LE(mine.n_bytes(), theirs.n_bytes()) << "df11's code is longer than the vector's";
  if (!json_.at("canonical").get<bool>()) return;
  auto same = [](std::span<const uint8_t> a, std::span<const uint8_t> b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  };
  EXPECT_TRUE(same(mine.luts, theirs.luts)) << "luts differ";
  EXPECT_TRUE(same(mine.encoded_exponent, theirs.encoded_exponent)) << "encoded_exponent differs";
  EXPECT_TRUE(same(mine.sign_mantissa, theirs.sign_mantissa)) << "sign_mantissa differs";
  EXPECT_TRUE(same(mine.output_positions, theirs.output_positions)) << "output_positions differ";
  EXPECT_TRUE(same(mine.gaps, theirs.gaps)) << "gaps differ";
  EXPECT_TRUE(same(mine.split_positions, theirs.split_positions)) << "split_positions differ";
}

INSTANTIATE_TEST_SUITE_P(Spec, ValidVector, ::testing::ValuesIn(spec_vector_names("valid")),
                         [](const auto& info) { return spec_test_name(info.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ValidVector);

}  // namespace
}  // namespace df11::test
