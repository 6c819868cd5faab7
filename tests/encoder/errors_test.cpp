// Every way plan_group / encode_group_range / encode_group refuse their input.
#include <gtest/gtest.h>

#include "df11/encoder.h"
#include "encoder_test_data.h"
#include "group_check.h"

namespace df11 {
namespace {

using testing::gaussian_bf16;
using testing::Members;
using testing::spans_of;

TEST(EncoderErrors, EmptyInput) {
  EXPECT_EQ(plan_group({}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(encode_group({}).status().code(), ErrorCode::kInvalidArgument);
  const std::vector<uint16_t> none;
  const std::vector<std::span<const uint16_t>> one_empty = {none};
  EXPECT_EQ(encode_group(one_empty).status().code(), ErrorCode::kInvalidArgument);
  const std::vector<uint16_t> some = {0x3f80};
  const std::vector<std::span<const uint16_t>> middle_empty = {some, none, some};
  const auto r = plan_group(middle_empty);
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("member 1"), std::string::npos) << r.status().message();
  const std::vector<std::span<const uint16_t>> ok = {some};
  EXPECT_EQ(plan_group(ok, 0).status().code(), ErrorCode::kInvalidArgument);
}

TEST(EncoderErrors, UncodableExponentsAreLocated) {
  Members m = {gaussian_bf16(1000, 0.02, 61), gaussian_bf16(1000, 0.02, 62)};
  for (uint16_t bad :
       {uint16_t{0x7f80}, uint16_t{0xff80}, uint16_t{0x7fc1}, uint16_t{0x7800}, uint16_t{0x7f7f}}) {
    Members c = m;
    c[1][17] = bad;
    c[1][500] = bad;
    const auto r = encode_group(spans_of(c));
    ASSERT_EQ(r.status().code(), ErrorCode::kUncodable) << bad;
    const std::string& msg = r.status().message();
    const uint32_t e = (bad >> 7) & 0xFF;
    EXPECT_NE(msg.find("exponent " + std::to_string(e)), std::string::npos) << msg;
    EXPECT_NE(msg.find("2 times"), std::string::npos) << msg;
    EXPECT_NE(msg.find("member 1, element 17"), std::string::npos) << msg;
  }
  // Exponent 239 (|x| just below 2^113) is still codable.
  Members c = m;
  c[0][3] = 0x777f;
  EXPECT_TRUE(encode_group(spans_of(c)).is_ok());
}

TEST(EncoderErrors, OutputSpansMustMatchThePlan) {
  const Members m = {gaussian_bf16(20000, 0.02, 63)};
  const auto spans = spans_of(m);
  const auto plan = plan_group(spans, 4096);
  ASSERT_TRUE(plan.is_ok());
  GroupBuffers b = testing::zeroed_buffers(*plan);
  const GroupOutput good = testing::output_of(b);
  for (int field = 0; field < 4; ++field) {
    GroupOutput bad = good;
    if (field == 0) bad.encoded_exponent = bad.encoded_exponent.first(plan->n_bytes - 1);
    if (field == 1) bad.sign_mantissa = bad.sign_mantissa.first(plan->n_elements - 1);
    if (field == 2) bad.output_positions = bad.output_positions.first(4);
    if (field == 3) bad.gaps = bad.gaps.first(plan->gaps_bytes - 1);
    EXPECT_EQ(encode_group_range(spans, *plan, 0, plan->n_chunks(), bad).status().code(),
              ErrorCode::kInvalidArgument)
        << field;
  }
  EXPECT_EQ(encode_group_range(spans, *plan, 2, 1, good).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(encode_group_range(spans, *plan, 0, plan->n_chunks() + 1, good).status().code(),
            ErrorCode::kInvalidArgument);
  const auto empty_range = encode_group_range(spans, *plan, 1, 1, good);
  ASSERT_TRUE(empty_range.is_ok());
  EXPECT_EQ(*empty_range, 0u);
  GroupPlan broken = *plan;
  broken.chunk_bit_offset[2] = broken.chunk_bit_offset[1];
  EXPECT_EQ(encode_group_range(spans, broken, 0, plan->n_chunks(), good).status().code(),
            ErrorCode::kInvalidArgument);
}

TEST(EncoderErrors, MembersChangedAfterPlanning) {
  Members m = {gaussian_bf16(20000, 0.02, 64)};
  const auto plan = plan_group(spans_of(m), 4096);
  ASSERT_TRUE(plan.is_ok());
  auto attempt = [&](const Members& changed) {
    GroupBuffers b = testing::zeroed_buffers(*plan);
    return encode_group_range(spans_of(changed), *plan, 0, plan->n_chunks(), testing::output_of(b));
  };
  // An exponent the code does not have.
  Members c = m;
  c[0][5000] = 0x0001;  // exponent 0: absent from N(0, 0.02^2) samples
  ASSERT_EQ(plan->code.length[0], 0);
  EXPECT_EQ(attempt(c).status().code(), ErrorCode::kInvalidArgument);
  // Every weight replaced by the rarest exponent: far more bits than planned.
  int rarest = -1;
  for (int e = 0; e < 240; ++e) {
    if (plan->code.length[e] != 0 &&
        (rarest < 0 || plan->code.length[e] > plan->code.length[rarest]))
      rarest = e;
  }
  Members d = m;
  for (auto& x : d[0]) x = static_cast<uint16_t>(rarest << 7);
  EXPECT_EQ(attempt(d).status().code(), ErrorCode::kInvalidArgument);
  // A different number of weights.
  Members e = m;
  e[0].pop_back();
  EXPECT_EQ(attempt(e).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace df11
