#include "group_writer.h"

#include <algorithm>
#include <utility>

#include "df11/group.h"
#include "parallel_tasks.h"

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

}  // namespace

std::array<uint64_t, kGroupTensorCount> stored_sizes(const GroupPlan& plan) {
  return {plan.luts.size(), plan.n_bytes,
          plan.n_elements,  plan.output_positions_bytes,
          plan.gaps_bytes,  8 * plan.split_positions.size()};
}

uint64_t step_count(const GroupPlan& plan, uint64_t step_weights) {
  const uint64_t chunks_per_step = std::max<uint64_t>(1, step_weights / plan.chunk_weights);
  return (plan.n_chunks() + chunks_per_step - 1) / chunks_per_step;
}

GroupWriter::GroupWriter(MemberSpans members, std::vector<MemberSource> sources,
                         const GroupPlan& plan, const StoredOffsets& offsets, uint64_t step_weights,
                         std::string what, bool hash_members)
    : members_(std::move(members)),
      pages_(members_.stream(), std::move(sources)),
      plan_(plan),
      offsets_(offsets),
      what_(std::move(what)),
      chunks_per_step_(std::max<uint64_t>(1, step_weights / plan.chunk_weights)),
      steps_(step_count(plan, step_weights)),
      positions_(plan.output_positions_bytes),
      gaps_(plan.gaps_bytes),
      member_hash_(hash_members ? members_.size() : 0) {}

GroupWriter::Step GroupWriter::step(uint64_t k) const {
  const uint64_t c0 = k * chunks_per_step_;
  const uint64_t c1 = std::min(plan_.n_chunks(), c0 + chunks_per_step_);
  return Step{c0, c1, c0 * plan_.chunk_weights,
              std::min(plan_.n_elements, c1 * plan_.chunk_weights)};
}

uint64_t GroupWriter::step_input_bytes(uint64_t k) const {
  const Step s = step(k);
  return 2 * (s.w1 - s.w0);
}

Status GroupWriter::encode_step(uint64_t k, StepBuffer& buffer) {
  if (members_.stream().size() != plan_.n_elements || k >= steps_) {
    return Status(ErrorCode::kInternal, what_ + ": plan does not match the members");
  }
  const Step s = step(k);
  const uint64_t bit0 = plan_.chunk_bit_offset[s.c0];
  const uint64_t bit1 = plan_.chunk_bit_offset[s.c1];
  buffer.stream.assign((bit1 + 7) / 8 - bit0 / 8, uint8_t{0});
  if (bit0 % 8 != 0) buffer.stream[0] = carry_;  // step k - 1's bits in the shared byte
  buffer.sign.resize(s.w1 - s.w0);
  GroupOutput out{buffer.stream, buffer.sign, positions_, gaps_};
  out.encoded_exponent_first = bit0 / 8;
  out.sign_mantissa_first = s.w0;

  // Each chunk's input pages mapped in one call before its worker reads them; they are
  // dropped after the step's write (write_step).
  const Result<uint32_t> encoded =
      encode_group_range(members_.spans(), plan_, s.c0, s.c1, out, {},
                         [this](uint64_t begin, uint64_t end) { pages_.populate(begin, end); });
  if (!encoded.is_ok()) return encoded.status().with_context(what_);
  most_ = std::max(most_, encoded.value());
  carry_ = buffer.stream.back();
  return Status::ok();
}

Status GroupWriter::write(const FileWriter& out, GroupTensor t, uint64_t at,
                          std::span<const uint8_t> bytes) const {
  Status status = out.write(offsets_[index(t)] + at, bytes);
  if (!status) return status.with_context(what_ + ": " + std::string(group_tensor(t).name()));
  return Status::ok();
}

Status GroupWriter::emit(const FileWriter& out, GroupTensor t, uint64_t at,
                         std::span<const uint8_t> bytes) {
  stored_hash_[index(t)].update(bytes);
  return write(out, t, at, bytes);
}

Status GroupWriter::write_step(uint64_t k, const StepBuffer& buffer, const FileWriter& out) {
  const Step s = step(k);
  const uint64_t first = plan_.chunk_bit_offset[s.c0] / 8;  // the buffer's first byte
  // Bytes before the next step's first bit are final: the next step only ORs into the byte
  // holding it, and carries it in its own buffer.
  const uint64_t end = s.c1 == plan_.n_chunks() ? plan_.n_bytes : plan_.chunk_bit_offset[s.c1] / 8;
  if (stream_done_ < first || end < stream_done_ || end - first > buffer.stream.size() ||
      buffer.sign.size() != s.w1 - s.w0) {
    return Status(ErrorCode::kInternal, what_ + ": step " + std::to_string(k) + " out of order");
  }
  const std::span<const uint8_t> stream =
      std::span(buffer.stream).subspan(stream_done_ - first, end - stream_done_);
  const std::span<const uint8_t> sign(buffer.sign);
  // The writes (one file's writes queue on its lock on tmpfs: one thread is all they can
  // use) beside the hashing, which would otherwise add ~25% to the shard's critical path.
  Status written;
  run_side_by_side(
      [&] {
        written = write(out, GroupTensor::kEncodedExponent, stream_done_, stream);
        if (written) written = write(out, GroupTensor::kSignMantissa, s.w0, sign);
      },
      [&] {
        stored_hash_[index(GroupTensor::kEncodedExponent)].update(stream);
        stored_hash_[index(GroupTensor::kSignMantissa)].update(sign);
        if (!member_hash_.empty()) {
          // The step's weights in stream order, so each member's pieces come in order; the
          // pages are still mapped from coding (no fault), and XXH3 runs at memory speed.
          const MemberStream& members = members_.stream();
          members.for_each_piece(s.w0, s.w1, [&](const uint16_t* w, uint64_t n, uint64_t at) {
            member_hash_[members.member_of(at)].update(
                std::span(reinterpret_cast<const uint8_t*>(w), 2 * n));
          });
        }
        // Then the step's input pages (unmapping them is kernel work, and not the writes'):
        // the next step (coding beside this) may still read the pages at the seam.
        pages_.drop(s.w0, s.w1, /*whole_pages_only=*/true);
      });
  DF11_RETURN_IF_ERROR(written);
  stream_done_ = end;
  return Status::ok();
}

Result<GroupWriteResult> GroupWriter::finish(const FileWriter& out) {
  if (stream_done_ != plan_.n_bytes) {
    return Status(ErrorCode::kInternal, what_ + ": finished before its last step was written");
  }
  if (most_ > kMaxWeightsPerBlockCompat) {
    // Pass 1 decided this group fits; the header is already laid out on that basis.
    return Status(ErrorCode::kInternal,
                  what_ + ": " + std::to_string(most_) + " weights start in one block, above " +
                      std::to_string(kMaxWeightsPerBlockCompat) + ", but planning said it fits");
  }
  const std::vector<uint8_t> splits = split_bytes(plan_);
  DF11_RETURN_IF_ERROR(emit(out, GroupTensor::kLuts, 0, plan_.luts));
  DF11_RETURN_IF_ERROR(emit(out, GroupTensor::kOutputPositions, 0, positions_));
  DF11_RETURN_IF_ERROR(emit(out, GroupTensor::kGaps, 0, gaps_));
  DF11_RETURN_IF_ERROR(emit(out, GroupTensor::kSplitPositions, 0, splits));
  // Per-step drops leave the pages at step seams and the kernel's fault-around pages (up to
  // 64 KiB at each): sweep them.
  pages_.drop(0, plan_.n_elements, /*whole_pages_only=*/false);

  GroupWriteResult result;
  for (const GroupTensorSpec& t : kGroupTensors) {
    result.stored.of(t.id) = stored_hash_[index(t.id)].hex_digest();
  }
  result.max_block_weights = most_;
  for (const Xxh3& h : member_hash_) result.member_xxh3.push_back(h.hex_digest());
  return result;
}

}  // namespace df11::app
