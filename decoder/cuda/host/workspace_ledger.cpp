// Launch epochs per workspace (workspace_ledger.h).
#include "workspace_ledger.h"

#include <algorithm>

namespace df11::cuda::detail {
namespace {

// Epochs per generation: 1 .. 2^32 - 1.
constexpr uint64_t kEpochsPerGeneration = 0xFFFFFFFFull;

}  // namespace

EpochSource::Epoch EpochSource::take() {
  const uint64_t n = next_.fetch_add(1, std::memory_order_relaxed);
  return Epoch{static_cast<uint32_t>(n % kEpochsPerGeneration + 1), n / kEpochsPerGeneration};
}

uint64_t EpochSource::generation() const {
  return next_.load(std::memory_order_relaxed) / kEpochsPerGeneration;
}

EpochSource& global_epoch_source() {
  static EpochSource source;
  return source;
}

WorkspaceLedger::Entry& WorkspaceLedger::entry_for(const void* workspace) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry& e) { return e.workspace == workspace; });
  Entry entry;
  if (it != entries_.end()) {
    entry = *it;
    entries_.erase(it);
  } else {
    entry.workspace = workspace;
    entry.generation = UINT64_MAX;  // nothing known: zero before the first launch
    if (entries_.size() == kMaxWorkspaces) entries_.erase(entries_.begin());
  }
  entries_.push_back(entry);
  return entries_.back();
}

void WorkspaceLedger::initialised(const void* workspace) {
  Entry& e = entry_for(workspace);
  e.epoch = 0;
  // The zeroing is enqueued after every launch of older generations was.
  e.generation = source_->generation();
}

WorkspaceLedger::Launch WorkspaceLedger::begin_launch(const void* workspace) {
  Entry& e = entry_for(workspace);
  const EpochSource::Epoch taken = source_->take();
  Launch launch;
  launch.epoch = taken.epoch;
  // Another plan's launches into this workspace since ours all have larger epochs of the same
  // generation (or the zeroing of a newer one), so only an unknown workspace or a new
  // generation needs the records cleared.
  launch.zero_first = e.generation != taken.generation;
  e.epoch = taken.epoch;
  e.generation = taken.generation;
  return launch;
}

std::optional<uint32_t> WorkspaceLedger::latest(const void* workspace) const {
  for (const Entry& e : entries_) {
    if (e.workspace == workspace) {
      return e.epoch == 0 ? std::nullopt : std::optional<uint32_t>(e.epoch);
    }
  }
  return std::nullopt;
}

}  // namespace df11::cuda::detail
