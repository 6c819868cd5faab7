#include "shard_writer.h"

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "df11/count_text.h"
#include "df11/hash.h"
#include "file_stream.h"
#include "group_writer.h"
#include "parallel_tasks.h"

namespace df11::app {
namespace {

// Raw tensors are copied in steps of this many bytes (each step resident meanwhile; several
// shards copy at once).
constexpr uint64_t kRawStepBytes = uint64_t{16} << 20;

// Copies a raw tensor to its place in the output, hashing it on the way.
Result<std::string> write_raw_tensor(const CheckpointSource& source, const TensorLocation& at,
                                     const FileWriter& file, uint64_t offset, Reporter& reporter,
                                     const CancelToken& cancel) {
  Xxh3 hash;
  uint64_t done = 0;
  Status status = source.stream_tensor(
      at,
      [&](std::span<const uint8_t> bytes) {
        hash.update(bytes);
        DF11_RETURN_IF_ERROR(file.write(offset + done, bytes));
        done += bytes.size();
        reporter.progress_advance(bytes.size());
        return Status::ok();
      },
      cancel, kRawStepBytes);
  if (!status) {
    return status.with_context(source.shard_name(at.shard) + ": tensor '" + source.tensor(at).name +
                               "'");
  }
  return hash.hex_digest();
}

// The shard's work in file order: a raw tensor to copy, a step of a coded group, or a
// group's end (its small tensors and checksums, once its last step is written).
struct Unit {
  enum class Kind { kRaw, kStep, kGroupEnd };
  Kind kind = Kind::kRaw;
  size_t item = 0;    // into ShardOut::items
  uint64_t step = 0;  // kStep
  size_t slot = 0;    // kStep: its StepBuffer (steps alternate)
};

std::vector<Unit> units_of(const CompressPlan& plan, const ShardOut& out, uint64_t step_weights) {
  std::vector<Unit> units;
  size_t steps = 0;
  for (size_t i = 0; i < out.items.size(); ++i) {
    const ShardItem& item = out.items[i];
    if (!item.is_group) {
      units.push_back({Unit::Kind::kRaw, i});
      continue;
    }
    const uint64_t n = step_count(plan.groups[item.index].plan, step_weights);
    for (uint64_t k = 0; k < n; ++k) units.push_back({Unit::Kind::kStep, i, k, steps++ % 2});
    units.push_back({Unit::Kind::kGroupEnd, i});
  }
  return units;
}

}  // namespace

Status write_shard_items(const CheckpointSource& source, const CompressPlan& plan, ShardOut& out,
                         const FinalizedLayout& layout, const FileWriter& writer,
                         uint64_t step_weights, bool hash_members, Reporter& reporter,
                         const CancelToken& cancel, std::vector<std::string>& details,
                         PhaseTimes* phases) {
  const std::vector<Unit> units = units_of(plan, out, step_weights);
  std::array<StepBuffer, 2> buffers;
  // A group's writer lives from its first step's coding to its end's writing: two at most.
  std::map<size_t, std::unique_ptr<GroupWriter>> groups;
  auto group_writer = [&](size_t i) -> Result<GroupWriter*> {
    auto found = groups.find(i);
    if (found != groups.end()) return found->second.get();
    const ShardItem& item = out.items[i];
    const PlannedGroup& group = plan.groups[item.index];
    DF11_ASSIGN_OR_RETURN(MemberSpans spans, group_member_spans(source, plan, group.spec));
    StoredOffsets offsets;
    for (size_t k = 0; k < offsets.size(); ++k) {
      offsets[k] = layout.tensor_offsets[item.first_tensor + k];
    }
    auto made = std::make_unique<GroupWriter>(
        std::move(spans), group_sources(source, plan, group.spec), group.plan, offsets,
        step_weights, group_context(source, plan, group.spec), hash_members);
    return groups.emplace(i, std::move(made)).first->second.get();
  };

  auto write_unit = [&](const Unit& unit) -> Status {
    const ShardItem& item = out.items[unit.item];
    if (unit.kind == Unit::Kind::kRaw) {
      DF11_ASSIGN_OR_RETURN(
          out.metadata.tensors[item.meta_index].xxh3,
          write_raw_tensor(source, plan.order[item.index], writer,
                           layout.tensor_offsets[item.first_tensor], reporter, cancel));
      return Status::ok();
    }
    GroupWriter& group = *groups.at(unit.item);
    if (unit.kind == Unit::Kind::kStep) {
      DF11_RETURN_IF_ERROR(group.write_step(unit.step, buffers[unit.slot], writer));
      reporter.progress_advance(group.step_input_bytes(unit.step));
      return Status::ok();
    }
    DF11_ASSIGN_OR_RETURN(GroupWriteResult written, group.finish(writer));
    GroupMeta& meta = out.metadata.groups[item.meta_index];
    meta.stored = written.stored;
    for (size_t k = 0; k < written.member_xxh3.size(); ++k) {
      meta.members[k].xxh3 = std::move(written.member_xxh3[k]);
    }
    const PlannedGroup& planned = plan.groups[item.index];
    details.push_back(group.what() + ": " + count_of(planned.spec.members.size(), "tensor") + ", " +
                      count_of(planned.plan.n_elements, "weight") + ", " +
                      std::to_string(planned.plan.code.max_length) + "-bit longest code, max " +
                      std::to_string(written.max_block_weights) + " weights per block");
    return Status::ok();
  };

  // Unit i is coded while unit i - 1 is written.
  const Unit* previous = nullptr;
  for (size_t i = 0; i <= units.size(); ++i) {
    DF11_RETURN_IF_ERROR(cancel.check());
    const Unit* current = i < units.size() ? &units[i] : nullptr;
    GroupWriter* coding = nullptr;
    if (current != nullptr && current->kind == Unit::Kind::kStep) {
      DF11_ASSIGN_OR_RETURN(coding, group_writer(current->item));
    }
    Status encoded, written;
    run_side_by_side(
        [&] {
          if (coding == nullptr) return;
          const PhaseTimer timer(phases, "  encode");
          encoded = coding->encode_step(current->step, buffers[current->slot]);
        },
        [&] {
          if (previous == nullptr) return;
          const PhaseTimer timer(phases, "  write + stored xxh3");
          written = write_unit(*previous);
        });
    DF11_RETURN_IF_ERROR(written);
    DF11_RETURN_IF_ERROR(encoded);
    if (previous != nullptr && previous->kind == Unit::Kind::kGroupEnd) {
      groups.erase(previous->item);
      // The members group_member_spans took (a source's staged bytes; a mapping's pages, which
      // the writer has dropped already).
      for (size_t m : plan.groups[out.items[previous->item].index].spec.members) {
        source.release(plan.order[m]);
      }
    }
    previous = current;
  }
  return Status::ok();
}

}  // namespace df11::app
