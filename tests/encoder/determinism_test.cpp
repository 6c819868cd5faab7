// Same input, same bytes: at any thread count, chunk size, and range split of the encode.
#include <gtest/gtest.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <thread>

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
  const Members m = big_input();
  const auto spans = spans_of(m);
  GroupPlan whole_plan;
  const auto whole = encode_group(spans, &whole_plan);
  ASSERT_TRUE(whole.is_ok());

  const auto plan = plan_group(spans, 100000);  // 33 chunks
  ASSERT_TRUE(plan.is_ok());
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
    EXPECT_EQ(*std::max_element(most.begin(), most.end()), whole_plan.max_block_weights);
  }
}

}  // namespace
}  // namespace df11
