// SHA-256 of the original shard files (spec 5.2 `sources`), computed while the shards are
// planned and encoded, and on the way the XXH3 of byte ranges of them (the tensors: spec 5.2
// member checksums). What hashes one file is the caller's: a file on disk (hash_file below),
// or a shard held in memory that is streamed tensor by tensor. SHA-256 cannot be split within a
// file (~2 GB/s per core with the SHA extensions), so the largest file's hashing is the shortest
// compress can take: each file starts at once, on a thread of its own, and reads ahead on a second
// one, which also does the XXH3 of what it has just read, so that both stay off that path. Reads
// with read(2): nothing stays resident.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "df11/cancel.h"
#include "df11/status.h"

namespace df11::app {

// Bytes [offset, offset + size) of a file.
struct ByteRange {
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct SourceDigests {
  std::string sha256;             // of the whole file, 64 lowercase hex
  std::vector<std::string> xxh3;  // of each range asked for, in that order, 16 lowercase hex
};

class SourceHasher {
 public:
  // Hashes file i, stopping with kInterrupted once `stop` is set; `read_ahead`: as hash_file.
  // Called at most once per file, from a worker or from get()'s caller.
  using HashFn = std::function<Result<SourceDigests>(size_t i, const std::atomic<bool>* stop,
                                                     bool read_ahead)>;

  // Files 0 .. count - 1, each hashed by `hash` (whose references must outlive the hasher).
  // With `background`, each file is a task enqueued, in order, in the calling thread's TBB
  // task arena: workers take them as they come free, so the hashing draws on the same thread
  // budget as the rest of the work (--threads N: N threads compute in all) and, once done,
  // gives its threads back to it. Without, nothing runs until get().
  SourceHasher(size_t count, HashFn hash, bool background);
  ~SourceHasher();  // stops the files being hashed and waits for them
  SourceHasher(const SourceHasher&) = delete;
  SourceHasher& operator=(const SourceHasher&) = delete;

  // When each file was hashed, in seconds since the hasher was made (for -v): `started` < 0
  // if it never began, `finished` < 0 if it has not ended; `on_caller`: hashed by get()'s
  // caller (no worker had taken it). Thread-safe.
  struct Timing {
    double started = -1;
    double finished = -1;
    bool on_caller = false;
  };
  std::vector<Timing> timings() const;

  // File i's digests or its error (a range past the file's end is kIo); kInterrupted if the
  // token stopped the work. A file no worker has started is hashed on the calling thread; one
  // being hashed is waited for. Thread-safe.
  Result<SourceDigests> get(size_t i);

  struct State;  // shared with the enqueued tasks, which may outlive the object

 private:
  std::shared_ptr<State> state_;
};

// SHA-256 of one file and the XXH3 of `ranges` of it, stopping with kInterrupted when
// `cancel` is cancelled or `stop` (may be null) is set. With `read_ahead`, a second thread
// reads the next pieces (and does the XXH3) while this one does the SHA-256.
Result<SourceDigests> hash_file(const std::string& path, const std::vector<ByteRange>& ranges,
                                const std::atomic<bool>* stop, const CancelToken& cancel,
                                bool read_ahead);

}  // namespace df11::app
