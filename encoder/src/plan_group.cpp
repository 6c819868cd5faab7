// plan_group(): everything about a group that can be known before writing a coded byte:
// the code, the tables, and the exact bit offset of every chunk (spec 3; encoder/NOTES.md).
#include <cmath>
#include <cstdio>
#include <limits>
#include <new>
#include <string>

#include "df11/encoder.h"
#include "df11/member_stream.h"
#include "exponent_count.h"

namespace df11 {
namespace {

// Where the first uncodable weight is, for a message a user can act on.
std::string locate_uncodable(const MemberStream& stream) {
  for (size_t m = 0; m < stream.member_count(); ++m) {
    const uint64_t begin = stream.member_start(m);
    const uint64_t end = stream.member_start(m + 1);
    for (uint64_t i = begin; i < end; ++i) {
      const uint16_t w = stream.at(i);
      if (((w >> 7) & 0xFF) > kMaxCodableExponent) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%04x", w);
        return "; first at member " + std::to_string(m) + ", element " + std::to_string(i - begin) +
               " (BF16 " + hex + ")";
      }
    }
  }
  return "";
}

double entropy_bits(const Histogram& hist, uint64_t n) {
  double h = 0;
  for (uint64_t c : hist) {
    if (c == 0) continue;
    const double p = static_cast<double>(c) / static_cast<double>(n);
    h -= p * std::log2(p);
  }
  return h;
}

// spec 3.2, 3.5, 3.6: the stream's bytes, its blocks, their gaps and output positions follow
// from the number of coded bits.
void set_stream_sizes(GroupPlan& plan) {
  plan.n_bytes = (plan.n_bits + 7) / 8;
  plan.n_blocks = (plan.n_bytes + kBytesPerBlock - 1) / kBytesPerBlock;
  plan.gaps_bytes = gap_bytes_for_blocks(plan.n_blocks);
  plan.output_positions_bytes = 4 * (plan.n_blocks + 1);
}

Result<GroupPlan> plan_group_unchecked(std::span<const std::span<const uint16_t>> members,
                                       uint64_t chunk_weights, const WeightsRead& weights_read,
                                       const WeightsRead& weights_to_read) {
  if (members.empty()) {
    return Status(ErrorCode::kInvalidArgument, "plan_group: group has no members");
  }
  if (chunk_weights == 0) {
    return Status(ErrorCode::kInvalidArgument, "plan_group: chunk_weights is 0");
  }
  uint64_t n = 0;
  for (size_t m = 0; m < members.size(); ++m) {
    // spec 3.2 / 3.8 rule S1: split positions strictly increase, so no member may be empty.
    if (members[m].empty()) {
      return Status(ErrorCode::kInvalidArgument,
                    "plan_group: member " + std::to_string(m) + " is empty");
    }
    // spec 3.6: output positions are uint32, so n <= Max_Group_Elements = 2^32 - 1.
    if (members[m].size() > std::numeric_limits<uint32_t>::max() - n) {
      return Status(ErrorCode::kUncodable,
                    "plan_group: group has more than 2^32 - 1 weights (output positions are "
                    "32-bit)");
    }
    n += members[m].size();
  }

  const MemberStream stream(members);
  GroupPlan plan;
  plan.n_elements = n;
  plan.chunk_weights = std::min(chunk_weights, n);
  const uint64_t n_chunks = (n + plan.chunk_weights - 1) / plan.chunk_weights;
  std::vector<ChunkCounts> chunks =
      count_chunk_exponents(stream, plan.chunk_weights, weights_read, weights_to_read);
  for (const ChunkCounts& counts : chunks) {
    for (int e = 0; e < 256; ++e) plan.histogram[e] += counts[e];
  }

  Result<Code> code = build_code(plan.histogram);
  if (!code.is_ok()) {
    if (code.status().code() == ErrorCode::kUncodable) {
      return Status(ErrorCode::kUncodable, code.status().message() + locate_uncodable(stream));
    }
    return code.status();
  }
  plan.code = std::move(code).value();
  DF11_ASSIGN_OR_RETURN(plan.luts, build_luts(plan.code));

  // Chunk c's codes occupy bits [chunk_bit_offset[c], chunk_bit_offset[c + 1]).
  plan.chunk_bit_offset.assign(n_chunks + 1, 0);
  for (uint64_t c = 0; c < n_chunks; ++c) {
    uint64_t bits = 0;
    for (int e = 0; e < 256; ++e) bits += uint64_t{chunks[c][e]} * plan.code.length[e];
    plan.chunk_bit_offset[c + 1] = plan.chunk_bit_offset[c] + bits;
  }
  plan.n_bits = plan.chunk_bit_offset[n_chunks];
  set_stream_sizes(plan);
  for (size_t m = 0; m + 1 < members.size(); ++m) {
    plan.split_positions.push_back(static_cast<int64_t>(stream.member_start(m + 1)));
  }
  plan.entropy_bits = entropy_bits(plan.histogram, n);
  return plan;
}

}  // namespace

Result<GroupPlan> plan_group(std::span<const std::span<const uint16_t>> members,
                             uint64_t chunk_weights, const WeightsRead& weights_read,
                             const WeightsRead& weights_to_read) {
  try {
    return plan_group_unchecked(members, chunk_weights, weights_read, weights_to_read);
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit,
                  "plan_group: out of memory (" + std::to_string(chunk_weights) +
                      " weights per chunk needs 1 KiB of counts per chunk)");
  }
}

Result<GroupPlan> predict_group_plan(const Histogram& sample, uint64_t n_elements,
                                     size_t n_members) {
  uint64_t n_sample = 0;
  for (uint64_t c : sample) n_sample += c;
  if (n_sample == 0 || n_elements == 0 || n_members == 0 || n_members > n_elements) {
    return Status(ErrorCode::kInvalidArgument,
                  "predict_group_plan: needs a non-empty sample and 1 <= members <= weights");
  }
  if (n_elements > std::numeric_limits<uint32_t>::max()) {
    return Status(ErrorCode::kUncodable,
                  "predict_group_plan: group has more than 2^32 - 1 weights (output positions "
                  "are 32-bit)");
  }
  GroupPlan plan;
  plan.histogram = sample;
  plan.n_elements = n_elements;
  plan.chunk_weights = n_elements;
  DF11_ASSIGN_OR_RETURN(plan.code, build_code(sample));
  DF11_ASSIGN_OR_RETURN(plan.luts, build_luts(plan.code));
  // The sample's share of each exponent, times the group's weights: n_bits in expectation.
  uint64_t sample_bits = 0;
  for (int e = 0; e < 256; ++e) sample_bits += sample[e] * plan.code.length[e];
  plan.n_bits = static_cast<uint64_t>(
      std::llround(static_cast<double>(sample_bits) / static_cast<double>(n_sample) *
                   static_cast<double>(n_elements)));
  plan.chunk_bit_offset = {0, plan.n_bits};
  set_stream_sizes(plan);
  // Where the members end is not known, only how many boundaries there are.
  plan.split_positions.assign(n_members - 1, 0);
  plan.entropy_bits = entropy_bits(sample, n_sample);
  return plan;
}

}  // namespace df11
