// Same input, same bytes: at any thread count, chunk size, and range split of the encode.
#include <gtest/gtest.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "df11/encoder.h"
#include "encoder_test_data.h"
#include "group_check.h"

namespace df11 {
namespace {

using testing::encode_with_chunks;
using testing::gaussian_bf16;
using testing::Members;
using testing::spans_of;

void expect_same(const GroupBuffers& a, const GroupBuffers& b) {
  EXPECT_EQ(a.luts, b.luts);
  EXPECT_TRUE(a.encoded_exponent == b.encoded_exponent);
  EXPECT_TRUE(a.sign_mantissa == b.sign_mantissa);
  EXPECT_EQ(a.output_positions, b.output_positions);
  EXPECT_TRUE(a.gaps == b.gaps);
  EXPECT_EQ(a.split_positions, b.split_positions);
}

Members big_input() {
  // ~3.3M weights in 3 members: several default-size chunks, chunks spanning members.
  return {gaussian_bf16(1500000, 0.02, 41), gaussian_bf16(300001, 0.03, 42),
          gaussian_bf16(1500007, 0.015, 43, 1e-3)};
}

// The whole group coded in one call, which the range-by-range tests must reproduce, and a
// plan of 33 chunks for them.
struct RangeCase {
  Members members = big_input();
  std::vector<std::span<const uint16_t>> spans = spans_of(members);
  GroupPlan whole_plan;
  Result<GroupBuffers> whole = encode_group(spans, &whole_plan);
  Result<GroupPlan> plan = plan_group(spans, 100000);
};

std::unique_ptr<RangeCase> range_case() { return std::make_unique<RangeCase>(); }

TEST(Determinism, SameBytesAtAnyThreadCount) {
  const Members m = big_input();
  const auto spans = spans_of(m);
  std::vector<GroupBuffers> results;
  for (int threads : {1, 2, 8}) {
    tbb::task_arena arena(threads);
    arena.execute([&] {
      const auto b = encode_group(spans);
      ASSERT_TRUE(b.is_ok()) << b.status().to_string();
      results.push_back(*b);
    });
  }
  {
    tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
    const auto b = encode_group(spans);
    ASSERT_TRUE(b.is_ok());
    results.push_back(*b);
  }
  ASSERT_EQ(results.size(), 4u);
  for (size_t i = 1; i < results.size(); ++i) expect_same(results[0], results[i]);

  GroupPlan plan;
  const auto b = encode_group(spans, &plan);
  ASSERT_TRUE(b.is_ok());
  testing::check_group(m, *b, plan);
}

TEST(Determinism, SameBytesForEveryChunkSize) {
  const Members m = big_input();
  GroupPlan reference_plan;
  const auto reference = encode_group(spans_of(m), &reference_plan);
  ASSERT_TRUE(reference.is_ok());
  for (uint64_t chunk :
       {uint64_t{1} << 20, uint64_t{4097}, uint64_t{65536}, uint64_t{333333}, uint64_t{1} << 30}) {
    SCOPED_TRACE(chunk);
    GroupPlan plan;
    const auto b = encode_with_chunks(m, chunk, &plan);
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    expect_same(*reference, *b);
    EXPECT_EQ(plan.max_block_weights, reference_plan.max_block_weights);
    EXPECT_EQ(plan.n_bits, reference_plan.n_bits);
  }
  const Members small = {gaussian_bf16(3000, 0.02, 44), gaussian_bf16(2001, 0.02, 45)};
  GroupPlan small_plan;
  const auto small_ref = encode_group(spans_of(small), &small_plan);
  ASSERT_TRUE(small_ref.is_ok());
  for (uint64_t chunk : {1u, 2u, 17u, 64u}) {
    GroupPlan plan;
    const auto b = encode_with_chunks(small, chunk, &plan);
    ASSERT_TRUE(b.is_ok());
    expect_same(*small_ref, *b);
    EXPECT_EQ(plan.max_block_weights, small_plan.max_block_weights);
  }
}

// encode_group_range on disjoint ranges, in any order or concurrently, gives the bytes of
// one call, and the per-range maxima reduce to the whole group's.
TEST(Determinism, RangesInAnyOrderAndConcurrently) {
  const auto c = range_case();
  ASSERT_TRUE(c->whole.is_ok() && c->plan.is_ok());
  const auto& spans = c->spans;
  const GroupBuffers* whole = &*c->whole;
  const auto& plan = c->plan;
  const uint64_t chunks = plan->n_chunks();
  const std::vector<uint64_t> cuts = {0, 1, 7, 8, 20, chunks - 1, chunks};
  for (int mode = 0; mode < 2; ++mode) {
    GroupBuffers b = testing::zeroed_buffers(*plan);
    b.split_positions = whole->split_positions;
    const GroupOutput out = testing::output_of(b);
    std::vector<uint32_t> most(cuts.size() - 1, 0);
    auto run = [&](size_t k) {
      const auto r = encode_group_range(spans, *plan, cuts[k], cuts[k + 1], out);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      most[k] = *r;
    };
    if (mode == 0) {
      for (size_t k = most.size(); k-- > 0;) run(k);  // backwards
    } else {
      // Plain threads: each call runs its own parallel_for inside, concurrently with the
      // others, on neighbouring ranges that share boundary bytes.
      std::thread a([&] {
        run(0);
        run(2);
      });
      std::thread b([&] {
        run(1);
        run(4);
      });
      run(3);
      run(5);
      a.join();
      b.join();
    }
    expect_same(*whole, b);
    EXPECT_EQ(*std::max_element(most.begin(), most.end()), c->whole_plan.max_block_weights);
  }
}

// Range by range into windows (memory for one range at a time), the shared boundary byte
// of neighbouring windows ORed together, gives the bytes of one call; each window holds
// exactly its range. Windows that do not hold the range are refused.
TEST(Determinism, WindowedRangesGiveTheWholeGroupsBytes) {
  const auto c = range_case();
  ASSERT_TRUE(c->whole.is_ok() && c->plan.is_ok());
  const auto& spans = c->spans;
  const GroupBuffers* whole = &*c->whole;
  const auto& plan = c->plan;
  GroupBuffers b = testing::zeroed_buffers(*plan);
  b.split_positions = whole->split_positions;
  std::fill(b.encoded_exponent.begin(), b.encoded_exponent.end(), uint8_t{0xEE});  // poison
  std::fill(b.sign_mantissa.begin(), b.sign_mantissa.end(), uint8_t{0xEE});
  const std::vector<uint64_t> cuts = {0, 1, 7, 8, 20, plan->n_chunks() - 1, plan->n_chunks()};
  uint8_t carry = 0;  // the previous window's last byte, when the next range starts inside it
  uint32_t most = 0;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    const uint64_t bit0 = plan->chunk_bit_offset[cuts[k]];
    const uint64_t bit1 = plan->chunk_bit_offset[cuts[k + 1]];
    const uint64_t w0 = cuts[k] * plan->chunk_weights;
    const uint64_t w1 = std::min(plan->n_elements, cuts[k + 1] * plan->chunk_weights);
    std::vector<uint8_t> stream((bit1 + 7) / 8 - bit0 / 8, 0);
    std::vector<uint8_t> sign(w1 - w0, 0xEE);
    if (bit0 % 8 != 0) stream[0] = carry;
    GroupOutput out = testing::output_of(b);
    out.encoded_exponent = stream;
    out.encoded_exponent_first = bit0 / 8;
    out.sign_mantissa = sign;
    out.sign_mantissa_first = w0;
    const auto r = encode_group_range(spans, *plan, cuts[k], cuts[k + 1], out);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    most = std::max(most, *r);
    std::copy(stream.begin(), stream.end(), b.encoded_exponent.begin() + bit0 / 8);
    std::copy(sign.begin(), sign.end(), b.sign_mantissa.begin() + w0);
    carry = stream.back();

    // The window one byte short at either end, or one weight short, is refused.
    GroupOutput short_front = out;
    short_front.encoded_exponent = out.encoded_exponent.subspan(1);
    short_front.encoded_exponent_first += 1;
    GroupOutput short_back = out;
    short_back.encoded_exponent = out.encoded_exponent.first(stream.size() - 1);
    GroupOutput short_sign = out;
    short_sign.sign_mantissa = out.sign_mantissa.first(sign.size() - 1);
    for (const GroupOutput& bad : {short_front, short_back, short_sign}) {
      EXPECT_EQ(encode_group_range(spans, *plan, cuts[k], cuts[k + 1], bad).status().code(),
                ErrorCode::kInvalidArgument);
    }
  }
  expect_same(*whole, b);
  EXPECT_EQ(most, c->whole_plan.max_block_weights);

  GroupOutput past = testing::output_of(b);
  past.sign_mantissa_first = 1;  // a window reaching past the plan's weights
  EXPECT_EQ(encode_group_range(spans, *plan, 0, 1, past).status().code(),
            ErrorCode::kInvalidArgument);
}

// plan_group and encode_group_range tell the caller of every weight they read, once per
// chunk, and the plan and bytes are the same as without being told.
TEST(Determinism, WeightsReadCoversEveryWeightOnce) {
  const auto c = range_case();
  ASSERT_TRUE(c->whole.is_ok() && c->plan.is_ok());
  const auto& spans = c->spans;
  const GroupBuffers* whole = &*c->whole;
  const uint64_t n = c->whole_plan.n_elements;
  std::mutex mutex;
  std::vector<std::pair<uint64_t, uint64_t>> told;
  const WeightsRead tell = [&](uint64_t begin, uint64_t end) {
    const std::lock_guard<std::mutex> lock(mutex);
    told.emplace_back(begin, end);
  };
  auto covers_once = [&](uint64_t begin, uint64_t end, uint64_t chunk) {
    std::sort(told.begin(), told.end());
    uint64_t at = begin;
    for (const auto& [b, e] : told) {
      EXPECT_EQ(b, at);
      EXPECT_LE(e - b, chunk);
      at = e;
    }
    EXPECT_EQ(at, end);
    told.clear();
  };
  const auto plan = plan_group(spans, 100000, tell);
  ASSERT_TRUE(plan.is_ok());
  EXPECT_EQ(plan->n_bits, c->whole_plan.n_bits);
  covers_once(0, n, 100000);
  GroupBuffers b = testing::zeroed_buffers(*plan);
  b.split_positions = whole->split_positions;
  ASSERT_TRUE(encode_group_range(spans, *plan, 0, 5, testing::output_of(b), tell).is_ok());
  covers_once(0, 500000, 100000);
  ASSERT_TRUE(
      encode_group_range(spans, *plan, 5, plan->n_chunks(), testing::output_of(b), tell).is_ok());
  covers_once(500000, n, 100000);
  expect_same(*whole, b);
}

}  // namespace
}  // namespace df11
