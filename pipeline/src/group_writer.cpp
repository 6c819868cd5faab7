#include "group_writer.h"

#include <tbb/parallel_invoke.h>

#include <algorithm>
#include <optional>

#include "df11/group.h"
#include "df11/hash.h"
#include "lazy_buffer.h"

namespace df11::app {
namespace {

constexpr size_t index(GroupTensor t) { return static_cast<size_t>(t); }

std::vector<uint8_t> split_bytes(const GroupPlan& plan) {
  std::vector<uint8_t> bytes(plan.split_positions.size() * 8);
  for (size_t i = 0; i < plan.split_positions.size(); ++i) {
    store_le64(bytes.data() + 8 * i, static_cast<uint64_t>(plan.split_positions[i]));
  }
  return bytes;
}

// Writes and hashes a finished piece of stored tensor t.
Status emit(const FileWriter& out, const StoredOffsets& offsets, uint64_t at,
            std::span<const uint8_t> bytes, std::array<Xxh3, kGroupTensorCount>& hashes,
            GroupTensor t, const std::string& what) {
  hashes[index(t)].update(bytes);
  Status status = out.write(offsets[index(t)] + at, bytes);
  if (!status) return status.with_context(what + ": " + std::string(group_tensor(t).name()));
  return Status::ok();
}

}  // namespace

Result<std::pair<std::span<uint8_t>, std::span<uint8_t>>> GroupScratch::prepare(
    const GroupPlan& plan) {
  if (stream_.size() < plan.n_bytes) {
    stream_ = LazyBuffer();  // unmap before mapping the larger one
    DF11_ASSIGN_OR_RETURN(stream_, LazyBuffer::create(plan.n_bytes, "encoded_exponent"));
  } else {
    std::fill_n(stream_.data(), plan.n_bytes, uint8_t{0});
  }
  if (sign_.size() < plan.n_elements) {
    sign_ = LazyBuffer();
    DF11_ASSIGN_OR_RETURN(sign_, LazyBuffer::create(plan.n_elements, "sign_mantissa"));
  }
  return std::pair{stream_.span().first(plan.n_bytes), sign_.span().first(plan.n_elements)};
}

std::array<uint64_t, kGroupTensorCount> stored_sizes(const GroupPlan& plan) {
  return {plan.luts.size(), plan.n_bytes,
          plan.n_elements,  plan.output_positions_bytes,
          plan.gaps_bytes,  8 * plan.split_positions.size()};
}

Result<GroupWriteResult> write_group(const MemberSpans& members, const MemberBytesDone& done_with,
                                     const GroupPlan& plan, const FileWriter& out,
                                     const StoredOffsets& offsets, uint64_t step_weights,
                                     GroupScratch& scratch, Reporter& reporter,
                                     const CancelToken& cancel, const std::string& what) {
  const MemberStream& weights = members.stream();
  if (weights.size() != plan.n_elements || plan.n_chunks() == 0) {
    return Status(ErrorCode::kInternal, what + ": plan does not match the members");
  }
  DF11_ASSIGN_OR_RETURN(const auto buffers, scratch.prepare(plan));
  // Named spans, not structured bindings: clang 14 cannot capture those in lambdas.
  const std::span<uint8_t> stream = buffers.first;
  const std::span<uint8_t> sign = buffers.second;
  std::vector<uint8_t> positions(plan.output_positions_bytes);  // ~0.1% of the stream
  std::vector<uint8_t> gaps(plan.gaps_bytes);                   // ~8% of the stream
  const GroupOutput dst{stream, sign, positions, gaps};

  std::array<Xxh3, kGroupTensorCount> stored_hash;
  std::vector<Xxh3> member_hash(members.size());
  const uint64_t chunks_per_step = std::max<uint64_t>(1, step_weights / plan.chunk_weights);
  const uint64_t n_steps = (plan.n_chunks() + chunks_per_step - 1) / chunks_per_step;
  struct Step {
    uint64_t c0, c1, w0, w1;  // chunks [c0, c1), weights [w0, w1)
  };
  auto step = [&](uint64_t k) {
    const uint64_t c0 = k * chunks_per_step;
    const uint64_t c1 = std::min(plan.n_chunks(), c0 + chunks_per_step);
    return Step{c0, c1, c0 * plan.chunk_weights,
                std::min(plan.n_elements, c1 * plan.chunk_weights)};
  };
  uint64_t stream_done = 0;  // bytes of encoded_exponent final and written
  // Writes out a coded step's final bytes. Bytes before
  // the next step's first bit are final: the next step only ORs into the byte holding it.
  auto finish = [&](const Step& s) -> Status {
    const uint64_t stream_end =
        s.c1 == plan.n_chunks() ? plan.n_bytes : plan.chunk_bit_offset[s.c1] / 8;
    DF11_RETURN_IF_ERROR(emit(out, offsets, stream_done,
                              stream.subspan(stream_done, stream_end - stream_done), stored_hash,
                              GroupTensor::kEncodedExponent, what));
    stream_done = stream_end;
    DF11_RETURN_IF_ERROR(emit(out, offsets, s.w0, sign.subspan(s.w0, s.w1 - s.w0), stored_hash,
                              GroupTensor::kSignMantissa, what));
    return Status::ok();
  };

  uint32_t most = 0;
  // Pipeline: step k is encoded (and its members hashed) while step k - 1 is written out.
  for (uint64_t k = 0; k <= n_steps; ++k) {
    DF11_RETURN_IF_ERROR(cancel.check());
    const bool coding = k < n_steps;
    const Step cur = coding ? step(k) : Step{};
    std::optional<Result<uint32_t>> encoded;
    Status written;
    tbb::parallel_invoke(
        [&] {
          if (coding)
            encoded.emplace(encode_group_range(members.spans(), plan, cur.c0, cur.c1, dst));
        },
        [&] {
          if (!coding) return;
          weights.for_each_piece(cur.w0, cur.w1, [&](const uint16_t* w, uint64_t n, uint64_t at) {
            member_hash[weights.member_of(at)].update(bf16_bytes({w, n}));
          });
        },
        [&] {
          if (k > 0) written = finish(step(k - 1));
        });
    DF11_RETURN_IF_ERROR(written);
    if (!coding) break;
    if (!encoded->is_ok()) return encoded->status().with_context(what);
    most = std::max(most, encoded->value());
    weights.for_each_piece(cur.w0, cur.w1, [&](const uint16_t*, uint64_t n, uint64_t at) {
      const size_t m = weights.member_of(at);
      done_with(m, 2 * (at - weights.member_start(m)), 2 * n);
    });
    reporter.progress_advance(2 * (cur.w1 - cur.w0));
  }
  if (most > kMaxWeightsPerBlockCompat) {
    // Pass 1 decided this group fits; the header is already laid out on that basis.
    return Status(ErrorCode::kInternal,
                  what + ": " + std::to_string(most) + " weights start in one block, above " +
                      std::to_string(kMaxWeightsPerBlockCompat) + ", but planning said it fits");
  }
  const std::vector<uint8_t> splits = split_bytes(plan);
  DF11_RETURN_IF_ERROR(emit(out, offsets, 0, plan.luts, stored_hash, GroupTensor::kLuts, what));
  DF11_RETURN_IF_ERROR(
      emit(out, offsets, 0, positions, stored_hash, GroupTensor::kOutputPositions, what));
  DF11_RETURN_IF_ERROR(emit(out, offsets, 0, gaps, stored_hash, GroupTensor::kGaps, what));
  DF11_RETURN_IF_ERROR(
      emit(out, offsets, 0, splits, stored_hash, GroupTensor::kSplitPositions, what));

  GroupWriteResult result;
  for (const GroupTensorSpec& t : kGroupTensors) {
    result.stored.of(t.id) = stored_hash[index(t.id)].hex_digest();
  }
  for (const Xxh3& h : member_hash) result.member_xxh3.push_back(h.hex_digest());
  result.max_block_weights = most;
  return result;
}

}  // namespace df11::app
