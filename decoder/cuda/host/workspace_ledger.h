// Which launch wrote a workspace's status records (GroupStatusRecord, decode_core.h), so
// that a report is never dropped and never read for the wrong launch.
//
// A record's key starts with the launch's epoch and is raised with atomicMax: the host reads
// the records whose epoch is that of the latest launch into the workspace, and records of
// earlier launches lose to later ones without a memset per launch. That needs two things:
//  - epochs grow with every launch into a workspace, whichever plan launches: they come from
//    one process-wide counter (EpochSource), so an engine that double-buffers workspaces, or
//    lets the plans of its blocks share one, still has the latest launch win;
//  - the host knows the epoch of the latest launch into *that* workspace, not the plan's
//    latest launch into any workspace: the ledger keeps it per workspace.
// When the 32-bit epoch wraps (a new generation of the counter), records of the old
// generation could beat new ones, so the first launch of a plan into a workspace in a new
// generation (or into a workspace it does not know) zeroes the records first.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace df11::cuda::detail {

// Hands out launch epochs 1 .. 2^32 - 1 (0 marks a record never written), then starts over
// in the next generation. Thread-safe.
class EpochSource {
 public:
  explicit EpochSource(uint64_t first_launch = 0) : next_(first_launch) {}
  struct Epoch {
    uint32_t epoch = 0;
    uint64_t generation = 0;
  };
  Epoch take();
  uint64_t generation() const;

 private:
  std::atomic<uint64_t> next_;
};

// The process-wide source every DecodePlan uses.
EpochSource& global_epoch_source();

// One plan's view of the workspaces it launched into. Not thread-safe (a plan is used by one
// host thread at a time).
class WorkspaceLedger {
 public:
  // Workspaces remembered; past this, the least recently launched one is forgotten (its next
  // launch zeroes it again, and its status can no longer be read).
  static constexpr size_t kMaxWorkspaces = 64;

  explicit WorkspaceLedger(EpochSource& source = global_epoch_source()) : source_(&source) {}

  // The caller has just enqueued the zeroing of `workspace`'s records.
  void initialised(const void* workspace);

  struct Launch {
    uint32_t epoch = 0;       // the records this launch writes carry it
    bool zero_first = false;  // enqueue the zeroing of the records before the launch
  };
  // A launch into `workspace` is about to be enqueued.
  Launch begin_launch(const void* workspace);

  // Epoch of this plan's latest launch into `workspace`, or nullopt if it knows none.
  std::optional<uint32_t> latest(const void* workspace) const;

 private:
  struct Entry {
    const void* workspace = nullptr;
    uint32_t epoch = 0;       // latest launch; 0: initialised, never launched
    uint64_t generation = 0;  // records of older generations are known to be gone
  };
  Entry& entry_for(const void* workspace);  // moved to the back (most recent)
  EpochSource* source_;
  std::vector<Entry> entries_;  // least recently used first
};

}  // namespace df11::cuda::detail
