#include "df11/source_hasher.h"

#include <fcntl.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <utility>

#include "df11/hash.h"
#include "df11/sha256.h"

namespace df11::app {
namespace {

constexpr size_t kPieceBytes = size_t{1} << 20;  // one read(2); a few stay in L2/L3
constexpr size_t kPieces = 4;                    // read-ahead ring

// Fills `buffer` from the file's current position; returns the bytes read (fewer only at
// the end of the file).
Result<size_t> read_piece(int fd, const std::string& path, std::span<uint8_t> buffer) {
  size_t done = 0;
  while (done < buffer.size()) {
    const ssize_t n = ::read(fd, buffer.data() + done, buffer.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status(ErrorCode::kIo, path + ": cannot read: " + std::strerror(errno));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

// The XXH3 of byte ranges of a file read front to back, fed piece by piece.
class RangeHashes {
 public:
  explicit RangeHashes(const std::vector<ByteRange>& ranges)
      : ranges_(ranges), order_(ranges.size()) {
    for (size_t r = 0; r < order_.size(); ++r) order_[r] = r;
    std::sort(order_.begin(), order_.end(),
              [&](size_t a, size_t b) { return ranges_[a].offset < ranges_[b].offset; });
    hashes_.resize(ranges_.size());
  }

  // Bytes [at, at + piece.size()) of the file.
  void feed(uint64_t at, std::span<const uint8_t> piece) {
    const uint64_t end = at + piece.size();
    for (size_t k = first_open_; k < order_.size(); ++k) {
      const ByteRange& r = ranges_[order_[k]];
      if (r.offset >= end) break;
      const uint64_t lo = std::max(at, r.offset);
      const uint64_t hi = std::min(end, r.offset + r.size);
      if (lo < hi) hashes_[order_[k]].update(piece.subspan(lo - at, hi - lo));
    }
    while (first_open_ < order_.size() &&
           ranges_[order_[first_open_]].offset + ranges_[order_[first_open_]].size <= end) {
      ++first_open_;
    }
    read_ = end;
  }

  // At the end of the file: the digests, or an error for a range past it.
  Result<std::vector<std::string>> digests(const std::string& path) const {
    std::vector<std::string> out;
    for (size_t r = 0; r < ranges_.size(); ++r) {
      if (ranges_[r].offset + ranges_[r].size > read_) {
        return Status(ErrorCode::kIo, path + ": bytes [" + std::to_string(ranges_[r].offset) +
                                          ", +" + std::to_string(ranges_[r].size) +
                                          ") lie past its end (" + std::to_string(read_) +
                                          " bytes): was it changed while being read?");
      }
      out.push_back(hashes_[r].hex_digest());
    }
    return out;
  }

 private:
  const std::vector<ByteRange>& ranges_;
  std::vector<size_t> order_;  // by offset
  std::vector<Xxh3> hashes_;
  size_t first_open_ = 0;  // in order_: ranges before it are complete
  uint64_t read_ = 0;
};

// Reads a file front to back into a ring of pieces on a thread of its own, which also feeds
// them to the range hashes while they are in its cache, so that the SHA-256 thread only
// hashes. next() returns the oldest piece not yet released.
class ReadAhead {
 public:
  ReadAhead(int fd, const std::string& path, RangeHashes& ranges)
      : fd_(fd), path_(path), ranges_(ranges) {
    for (auto& b : buffers_) b.resize(kPieceBytes);
    thread_ = std::thread([this] { run(); });
  }
  ~ReadAhead() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      quit_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // The next piece (empty at the end of the file) or the read's error; valid until release().
  Result<std::span<const uint8_t>> next() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return filled_ > 0 || done_; });
    if (filled_ > 0) return std::span<const uint8_t>(buffers_[tail_].data(), sizes_[tail_]);
    if (!error_) return error_;
    return std::span<const uint8_t>();
  }
  void release() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      tail_ = (tail_ + 1) % kPieces;
      --filled_;
    }
    changed_.notify_all();
  }

 private:
  void run() {
    for (;;) {
      size_t slot;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return filled_ < kPieces || quit_; });
        if (quit_) return;
        slot = head_;  // free until it is counted in filled_
      }
      Result<size_t> n = read_piece(fd_, path_, buffers_[slot]);
      if (n.is_ok()) {
        ranges_.feed(read_, std::span<const uint8_t>(buffers_[slot].data(), *n));
        read_ += *n;
      }
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (!n.is_ok() || *n == 0) {
          if (!n.is_ok()) error_ = n.status();
          done_ = true;
        } else {
          sizes_[slot] = *n;
          head_ = (head_ + 1) % kPieces;
          ++filled_;
        }
      }
      changed_.notify_all();
      if (done_) return;  // only this thread sets it
    }
  }

  const int fd_;
  const std::string& path_;
  RangeHashes& ranges_;  // fed by the reading thread only
  uint64_t read_ = 0;    // the reading thread's
  std::array<std::vector<uint8_t>, kPieces> buffers_;
  std::array<size_t, kPieces> sizes_{};
  std::mutex mutex_;
  std::condition_variable changed_;
  size_t head_ = 0;    // next slot to fill
  size_t tail_ = 0;    // oldest filled slot
  size_t filled_ = 0;  // slots filled and not released
  bool done_ = false;  // end of file or error: nothing more comes
  bool quit_ = false;
  Status error_;
  std::thread thread_;
};

// The same pieces read on the calling thread.
class ReadInline {
 public:
  ReadInline(int fd, const std::string& path, RangeHashes& ranges)
      : fd_(fd), path_(path), ranges_(ranges), buffer_(4 * kPieceBytes) {}
  Result<std::span<const uint8_t>> next() {
    DF11_ASSIGN_OR_RETURN(const size_t n, read_piece(fd_, path_, buffer_));
    const std::span<const uint8_t> piece(buffer_.data(), n);
    ranges_.feed(read_, piece);
    read_ += n;
    return piece;
  }
  void release() {}

 private:
  const int fd_;
  const std::string& path_;
  RangeHashes& ranges_;
  uint64_t read_ = 0;
  std::vector<uint8_t> buffer_;
};

template <class Pieces>
Result<std::string> hash_pieces(Pieces& pieces, const std::string& path,
                                const std::atomic<bool>* stop, const CancelToken& cancel) {
  Sha256 sha;
  for (;;) {
    DF11_RETURN_IF_ERROR(cancel.check());
    if (stop != nullptr && stop->load(std::memory_order_relaxed)) {
      return Status(ErrorCode::kInterrupted, path + ": hashing stopped");
    }
    DF11_ASSIGN_OR_RETURN(const std::span<const uint8_t> piece, pieces.next());
    if (piece.empty()) break;
    sha.update(piece);
    pieces.release();
  }
  return sha.hex_digest();
}

enum class Job { kPending, kRunning, kDone };

}  // namespace

Result<SourceDigests> hash_file(const std::string& path, const std::vector<ByteRange>& ranges,
                                const std::atomic<bool>* stop, const CancelToken& cancel,
                                bool read_ahead) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status(errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                  path + ": cannot open: " + std::strerror(errno));
  }
  RangeHashes range_hashes(ranges);
  Result<std::string> sha256 = Status(ErrorCode::kInternal, path + ": not hashed");
  if (read_ahead) {
    ReadAhead pieces(fd, path, range_hashes);
    sha256 = hash_pieces(pieces, path, stop, cancel);
  } else {
    ReadInline pieces(fd, path, range_hashes);
    sha256 = hash_pieces(pieces, path, stop, cancel);
  }
  ::close(fd);
  DF11_RETURN_IF_ERROR(sha256.status());
  SourceDigests digests;
  digests.sha256 = std::move(sha256).value();
  DF11_ASSIGN_OR_RETURN(digests.xxh3, range_hashes.digests(path));
  return digests;
}

// Everything the enqueued tasks touch: they hold it alive, and find `stop` set and return at
// once if they start after the hasher is gone. Every field is read and written under
// `mutex`, except `hash` (constant once shared; what it refers to is used only by running
// jobs, which ~SourceHasher awaits) and `stop`.
struct SourceHasher::State {
  HashFn hash;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<Job> jobs;
  std::vector<std::optional<Result<SourceDigests>>> results;
  std::vector<SourceHasher::Timing> timings;
  const std::chrono::steady_clock::time_point made = std::chrono::steady_clock::now();
  size_t running = 0;
  std::atomic<bool> stop{false};

  // Claims file i if nobody has (returns false if someone did), hashes it, stores the result.
  bool run(size_t i, bool read_ahead) {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      if (stop.load() || jobs[i] != Job::kPending) return false;
      jobs[i] = Job::kRunning;
      ++running;
      timings[i].started = since_made();
      timings[i].on_caller = !read_ahead;
    }
    Result<SourceDigests> digest = hash(i, &stop, read_ahead);
    {
      const std::lock_guard<std::mutex> lock(mutex);
      timings[i].finished = since_made();
      results[i].emplace(std::move(digest));
      jobs[i] = Job::kDone;
      --running;
    }
    changed.notify_all();
    return true;
  }

  double since_made() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - made).count();
  }
};

namespace {

// Files waiting for a worker, one enqueued task each. The tasks capture nothing and take their
// file from here under the mutex: what a task reads was published under it, an ordering
// ThreadSanitizer sees (it cannot see the uninstrumented TBB's hand-over of a task's
// captures).
struct WaitingFiles {
  std::mutex mutex;
  std::deque<std::pair<std::shared_ptr<SourceHasher::State>, size_t>> files;
};

// Never destroyed: a worker may still take a task of a hasher that is gone (it then finds
// `stop` set) while the process exits and destroys its statics.
WaitingFiles& waiting_files() {
  static WaitingFiles* const waiting = new WaitingFiles;
  return *waiting;
}

void hash_a_waiting_file() {
  std::pair<std::shared_ptr<SourceHasher::State>, size_t> file;
  {
    const std::lock_guard<std::mutex> lock(waiting_files().mutex);
    if (waiting_files().files.empty()) return;
    file = std::move(waiting_files().files.front());
    waiting_files().files.pop_front();
  }
  file.first->run(file.second, /*read_ahead=*/true);
}

}  // namespace

SourceHasher::SourceHasher(size_t count, HashFn hash, bool background)
    : state_(std::make_shared<State>()) {
  {
    // Under the mutex: the tasks read what is set here after taking it, which is also the
    // ordering ThreadSanitizer sees (it cannot see the uninstrumented TBB's).
    const std::lock_guard<std::mutex> lock(state_->mutex);
    state_->hash = std::move(hash);
    state_->jobs.assign(count, Job::kPending);
    state_->results.resize(count);
    state_->timings.resize(count);
  }
  if (!background) return;
  for (size_t i = 0; i < count; ++i) {
    {
      const std::lock_guard<std::mutex> lock(waiting_files().mutex);
      waiting_files().files.emplace_back(state_, i);
    }
    tbb::this_task_arena::enqueue(hash_a_waiting_file);
  }
}

SourceHasher::~SourceHasher() {
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->stop.store(true);
  state_->changed.wait(lock, [&] { return state_->running == 0; });
}

std::vector<SourceHasher::Timing> SourceHasher::timings() const {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->timings;
}

Result<SourceDigests> SourceHasher::get(size_t i) {
  State& s = *state_;
  {
    const std::lock_guard<std::mutex> lock(s.mutex);
    if (i >= s.jobs.size()) {
      return Status(ErrorCode::kInternal, "source hasher: no file " + std::to_string(i));
    }
  }
  // On the caller's thread, the file is read inline: the caller is one of the threads it
  // was allowed, and under --threads 1 the only one.
  s.run(i, /*read_ahead=*/false);
  std::unique_lock<std::mutex> lock(s.mutex);
  s.changed.wait(lock, [&] { return s.jobs[i] == Job::kDone; });
  return *s.results[i];
}

}  // namespace df11::app
