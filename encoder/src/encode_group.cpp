// encode_group_range() and encode_group(): parallel coding of a planned group.
#include <tbb/enumerable_thread_specific.h>

#include <algorithm>
#include <limits>
#include <new>
#include <string>

#include "chunk_encoder.h"
#include "df11/encoder.h"
#include "df11/group_schema.h"
#include "df11/member_stream.h"
#include "parallel_chunks.h"

namespace df11 {
namespace {

Status size_error(GroupTensor what, uint64_t have, uint64_t want) {
  return Status(ErrorCode::kInvalidArgument,
                "encode_group_range: " + std::string(group_tensor(what).name()) + " has " +
                    std::to_string(have) + " bytes, the plan needs " + std::to_string(want));
}

Status window_error(GroupTensor what, uint64_t first, uint64_t size, uint64_t total) {
  return Status(ErrorCode::kInvalidArgument,
                "encode_group_range: " + std::string(group_tensor(what).name()) + " window [" +
                    std::to_string(first) + ", +" + std::to_string(size) +
                    ") reaches past the plan's " + std::to_string(total) + " bytes");
}

Status range_error(GroupTensor what, uint64_t begin, uint64_t end, uint64_t first, uint64_t size) {
  return Status(ErrorCode::kInvalidArgument,
                "encode_group_range: the range needs " + std::string(group_tensor(what).name()) +
                    " bytes [" + std::to_string(begin) + ", " + std::to_string(end) +
                    "), the output holds [" + std::to_string(first) + ", " +
                    std::to_string(first + size) + ")");
}

// The plan is a caller-visible struct: check what the writer relies on for memory safety.
Status check_plan(const GroupPlan& plan, uint64_t n, uint64_t first_chunk, uint64_t last_chunk,
                  const GroupOutput& out) {
  if (plan.n_elements == 0 || plan.n_elements > std::numeric_limits<uint32_t>::max() ||
      plan.chunk_weights == 0 || plan.chunk_bit_offset.size() < 2 ||
      plan.n_chunks() != (plan.n_elements + plan.chunk_weights - 1) / plan.chunk_weights ||
      plan.chunk_bit_offset.front() != 0 || plan.chunk_bit_offset.back() != plan.n_bits ||
      plan.n_bytes != (plan.n_bits + 7) / 8 ||
      plan.n_blocks != (plan.n_bytes + kBytesPerBlock - 1) / kBytesPerBlock ||
      plan.gaps_bytes != gap_bytes_for_blocks(plan.n_blocks) ||
      plan.output_positions_bytes != 4 * (plan.n_blocks + 1)) {
    return Status(ErrorCode::kInvalidArgument, "encode_group_range: plan is inconsistent");
  }
  if (n != plan.n_elements) {
    return Status(ErrorCode::kInvalidArgument, "encode_group_range: members hold " +
                                                   std::to_string(n) + " weights, the plan " +
                                                   std::to_string(plan.n_elements));
  }
  if (first_chunk > last_chunk || last_chunk > plan.n_chunks()) {
    return Status(ErrorCode::kInvalidArgument,
                  "encode_group_range: chunk range [" + std::to_string(first_chunk) + ", " +
                      std::to_string(last_chunk) + ") outside the plan's " +
                      std::to_string(plan.n_chunks()) + " chunks");
  }
  for (uint64_t c = first_chunk; c < last_chunk; ++c) {
    if (plan.chunk_bit_offset[c] >= plan.chunk_bit_offset[c + 1] ||
        plan.chunk_bit_offset[c + 1] > plan.n_bits) {
      return Status(ErrorCode::kInvalidArgument,
                    "encode_group_range: plan's bit offsets of chunk " + std::to_string(c) +
                        " are not increasing");
    }
  }
  // Windows (full spans are the window [0, size)): inside the plan's sizes, and holding the
  // range's stream bytes and weights.
  if (out.encoded_exponent_first > plan.n_bytes ||
      out.encoded_exponent.size() > plan.n_bytes - out.encoded_exponent_first) {
    return window_error(GroupTensor::kEncodedExponent, out.encoded_exponent_first,
                        out.encoded_exponent.size(), plan.n_bytes);
  }
  if (out.sign_mantissa_first > plan.n_elements ||
      out.sign_mantissa.size() > plan.n_elements - out.sign_mantissa_first) {
    return window_error(GroupTensor::kSignMantissa, out.sign_mantissa_first,
                        out.sign_mantissa.size(), plan.n_elements);
  }
  if (first_chunk < last_chunk) {
    const uint64_t byte_begin = plan.chunk_bit_offset[first_chunk] / 8;
    const uint64_t byte_end = (plan.chunk_bit_offset[last_chunk] + 7) / 8;
    if (byte_begin < out.encoded_exponent_first ||
        byte_end > out.encoded_exponent_first + out.encoded_exponent.size()) {
      return range_error(GroupTensor::kEncodedExponent, byte_begin, byte_end,
                         out.encoded_exponent_first, out.encoded_exponent.size());
    }
    const uint64_t weight_begin = first_chunk * plan.chunk_weights;
    const uint64_t weight_end = std::min(plan.n_elements, last_chunk * plan.chunk_weights);
    if (weight_begin < out.sign_mantissa_first ||
        weight_end > out.sign_mantissa_first + out.sign_mantissa.size()) {
      return range_error(GroupTensor::kSignMantissa, weight_begin, weight_end,
                         out.sign_mantissa_first, out.sign_mantissa.size());
    }
  }
  if (out.output_positions.size() != plan.output_positions_bytes) {
    return size_error(GroupTensor::kOutputPositions, out.output_positions.size(),
                      plan.output_positions_bytes);
  }
  if (out.gaps.size() != plan.gaps_bytes) {
    return size_error(GroupTensor::kGaps, out.gaps.size(), plan.gaps_bytes);
  }
  return Status::ok();
}

// spec 3.6: the number of codes that start before stream bit `bit`.
uint64_t codes_before_bit(const MemberStream& stream, const GroupPlan& plan,
                          const EncodeTables& tables, uint64_t bit) {
  const auto& offsets = plan.chunk_bit_offset;
  const uint64_t c = static_cast<uint64_t>(std::upper_bound(offsets.begin(), offsets.end(), bit) -
                                           offsets.begin()) -
                     1;
  if (c >= plan.n_chunks()) return plan.n_elements;
  uint64_t count = c * plan.chunk_weights;
  uint64_t pos = offsets[c];
  const uint64_t end = std::min(plan.n_elements, count + plan.chunk_weights);
  stream.for_each_piece(count, end, [&](const uint16_t* p, uint64_t k, uint64_t) {
    for (uint64_t i = 0; i < k && pos < bit; ++i) {
      pos += tables.length[(p[i] >> 7) & 0xFF];
      ++count;
    }
  });
  return count;
}

Result<uint32_t> encode_range_unchecked(std::span<const std::span<const uint16_t>> members,
                                        const GroupPlan& plan, uint64_t first_chunk,
                                        uint64_t last_chunk, const GroupOutput& out,
                                        const WeightsRead& weights_read,
                                        const WeightsRead& weights_to_read) {
  uint64_t n = 0;
  for (const auto& m : members) n += m.size();  // bounded: spans of distinct objects
  DF11_RETURN_IF_ERROR(check_plan(plan, n, first_chunk, last_chunk, out));
  if (first_chunk == last_chunk) return uint32_t{0};
  DF11_ASSIGN_OR_RETURN(const EncodeTables tables, make_encode_tables(plan.code));
  const MemberStream stream(members);

  const uint64_t chunks = last_chunk - first_chunk;
  std::vector<ChunkBlocks> blocks(chunks);
  std::vector<Status> status(chunks);
  tbb::enumerable_thread_specific<ChunkScratch> scratch;
  parallel_for_chunks(first_chunk, last_chunk, [&](uint64_t c) {
    const uint64_t k = c - first_chunk;
    if (weights_to_read) {
      weights_to_read(c * plan.chunk_weights,
                      std::min(plan.n_elements, (c + 1) * plan.chunk_weights));
    }
    status[k] = encode_chunk(stream, plan, tables, c, out, scratch.local(), blocks[k]);
    if (weights_read) {
      weights_read(c * plan.chunk_weights, std::min(plan.n_elements, (c + 1) * plan.chunk_weights));
    }
  });
  for (const Status& s : status) DF11_RETURN_IF_ERROR(s);  // first failing chunk: stable

  // Weights per block, for blocks whose first code is in the range. Block numbers of
  // successive chunks continue each other, so neighbours' positions give the sizes.
  uint32_t most = 0;
  const ChunkBlocks* prev = nullptr;
  for (const ChunkBlocks& b : blocks) {
    if (!b.any) continue;
    if (prev != nullptr) most = std::max(most, b.first_position - prev->last_position);
    most = std::max(most, b.max_inner);
    prev = &b;
  }
  if (prev != nullptr) {
    const uint64_t next_block = prev->last_block + 1;
    const uint64_t next_position =
        next_block >= plan.n_blocks
            ? plan.n_elements
            : codes_before_bit(stream, plan, tables, next_block * kBitsPerBlock);
    most = std::max(most, static_cast<uint32_t>(next_position - prev->last_position));
  }
  return most;
}

}  // namespace

Result<uint32_t> encode_group_range(std::span<const std::span<const uint16_t>> members,
                                    const GroupPlan& plan, uint64_t first_chunk,
                                    uint64_t last_chunk, const GroupOutput& out,
                                    const WeightsRead& weights_read,
                                    const WeightsRead& weights_to_read) {
  try {
    return encode_range_unchecked(members, plan, first_chunk, last_chunk, out, weights_read,
                                  weights_to_read);
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, "encode_group_range: out of memory");
  }
}

Result<GroupBuffers> encode_group(std::span<const std::span<const uint16_t>> members,
                                  GroupPlan* plan_out) {
  DF11_ASSIGN_OR_RETURN(GroupPlan plan, plan_group(members));
  try {
    GroupBuffers buffers;
    buffers.encoded_exponent.resize(plan.n_bytes);
    buffers.sign_mantissa.resize(plan.n_elements);
    buffers.output_positions.resize(plan.output_positions_bytes);
    buffers.gaps.resize(plan.gaps_bytes);
    const GroupOutput out{buffers.encoded_exponent, buffers.sign_mantissa, buffers.output_positions,
                          buffers.gaps};
    DF11_ASSIGN_OR_RETURN(plan.max_block_weights,
                          encode_group_range(members, plan, 0, plan.n_chunks(), out));
    buffers.luts = plan.luts;
    // spec 3.2: split_positions is I64 little-endian.
    buffers.split_positions.resize(8 * plan.split_positions.size());
    for (size_t i = 0; i < plan.split_positions.size(); ++i) {
      store_le64(buffers.split_positions.data() + 8 * i,
                 static_cast<uint64_t>(plan.split_positions[i]));
    }
    if (plan_out != nullptr) *plan_out = std::move(plan);
    return buffers;
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, "encode_group: out of memory for " +
                                                 std::to_string(plan.n_elements) + " weights");
  }
}

}  // namespace df11
