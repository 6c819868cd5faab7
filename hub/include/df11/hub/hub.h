// df11::hub: a Hugging Face Hub client over libcurl (no Python): download a repository into
// the cache that huggingface_hub and transformers share, upload a folder through the Git LFS
// protocol.
//
// The library never prints, exits or looks at signals: it reports through the caller's
// progress callback and stops when the caller's cancellation flag is set (kInterrupted).
// Errors are Statuses: kNotFound (repository, revision or file), kInvalidArgument (a bad repo
// id, an insecure endpoint, a missing or rejected token), kCorruptData (a size or SHA-256 the
// server sent that does not match the bytes), kBadJson (a server answer that is not what the
// protocol says), kIo (network or disk), kInterrupted. The token never appears in a message.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "df11/status.h"

namespace df11::hub {

// Where to talk to and where to keep files.
struct HubConfig {
  std::string endpoint = "https://huggingface.co";  // no trailing slash
  std::optional<std::string> token;                 // never printed
  std::string cache_dir;                            // the hub cache (models--org--name/...)
  // No request at all: pull resolves from the cache, everything else fails at once, naming
  // HF_HUB_OFFLINE.
  bool offline = false;
  // Seconds to connect, and of silence before an attempt fails (then it is retried): for
  // metadata and API requests (listings, HEAD, whoami, preupload, create), and for file
  // transfers (downloads, LFS uploads, range reads). huggingface_hub's names and defaults.
  double etag_timeout_seconds = 10;      // HF_HUB_ETAG_TIMEOUT
  double download_timeout_seconds = 10;  // HF_HUB_DOWNLOAD_TIMEOUT
};

// HF_ENDPOINT (default https://huggingface.co); the token from HF_TOKEN, else the file
// HF_HOME/token (whitespace stripped); the cache from HF_HUB_CACHE, else HF_HOME/hub, else
// ~/.cache/huggingface/hub (HF_HOME defaults to ~/.cache/huggingface). kInvalidArgument for an
// endpoint that is not https:// (http:// is allowed for loopback hosts only).
Result<HubConfig> config_from_environment();

// "org/name" with an optional "@revision" (branch, tag or 40-hex commit).
struct RepoRef {
  std::string repo_id;
  std::string revision = "main";
};

// kInvalidArgument naming the text unless it is "org/name[@rev]" with Hub-valid names.
Result<RepoRef> parse_repo_ref(std::string_view text);
// True if `text` has the shape of a Hub repo id (used to accept an id where a folder is
// expected, when no such folder exists).
bool looks_like_repo_ref(std::string_view text);

// A path inside a repository, as the server sends it: relative, '/'-separated, no "." or ".."
// segment, no backslash, NUL or control character, at most 1024 bytes.
bool is_safe_repo_path(std::string_view path);

// What a transfer reports; called from worker threads (serialised by the library), at most
// a few times per second per file plus once when each file ends.
struct TransferProgress {
  uint64_t bytes_done = 0;   // bytes transferred or found in the cache, all files
  uint64_t bytes_total = 0;  // bytes of every file in the operation
  int files_done = 0;
  int files_total = 0;
};
using ProgressFn = std::function<void(const TransferProgress&)>;

// Caller-owned controls shared by every operation.
struct TransferControl {
  int threads = 8;      // parallel transfers (>= 1)
  ProgressFn progress;  // may be empty
  // Polled between and during transfers (every ~20 ms and on every received chunk); true
  // stops the operation with kInterrupted. May be empty. Must be cheap and thread-safe.
  std::function<bool()> cancelled;
  int max_attempts = 6;               // per request, with backoff (tests lower it)
  double backoff_base_seconds = 0.5;  // 0.5, 1, 2, ... capped at 30 s
  // Called before each retry's wait, from the worker that retries, with one line naming the
  // request, why it failed and when it is tried again ("list org/x@main: network: connection
  // refused: retrying in 0.5 s (attempt 2 of 3)"). May be empty. Must be thread-safe.
  std::function<void(const std::string& line)> on_retry;
};

// ---- pull ----
struct PullOptions {
  RepoRef ref;
  std::optional<std::string> local_dir;  // plain files + .cache/huggingface/download metadata
  std::vector<std::string> include;      // fnmatch globs on repo paths; empty = everything
};

struct PullResult {
  std::string commit;        // the resolved 40-hex commit
  std::string snapshot_dir;  // cache snapshots/<commit> or the local dir
  int files_total = 0;
  int files_downloaded = 0;
  int files_reused = 0;           // already in the cache or local dir
  uint64_t bytes_downloaded = 0;  // body bytes received (a resumed file counts its rest only)
  uint64_t bytes_total = 0;       // size of the selected files
};

// Downloads the selected files of `ref` into the shared cache (or options.local_dir). Files
// already present (by blob or by snapshot entry) are not fetched again; every new blob is
// written as <blob>.<random>.incomplete, checked for size and (LFS) SHA-256, then renamed,
// under a flock on <cache>/.locks/<repo folder>/<etag>.lock. kNotFound if nothing matches
// `include`. A failure leaves no partial blob and no snapshot entry for the failed file; an
// interruption (control.cancelled) keeps the bytes received as <blob>.incomplete, where the
// next pull of that blob continues (Range), hashing the kept prefix first.
Result<PullResult> pull(const HubConfig& config, const PullOptions& options,
                        const TransferControl& control);

// ---- remote listing ----
// A file of a repo at a commit, as the revision listing gives it.
struct RemoteFile {
  std::string path;
  uint64_t size = 0;
  std::string etag;  // lfs sha256, else the git blob id
  bool lfs = false;
};
struct RemoteListing {
  std::string commit;
  std::vector<RemoteFile> files;
};

// ---- push ----
struct PushOptions {
  RepoRef ref;         // repository and target branch
  std::string folder;  // local folder: every regular file except .git/ and .cache/
  bool private_repo = false;
  bool create_pr = false;
  std::string commit_message = "Upload with df11";
  // SHA-256 the caller already computed while reading the files (push_model: the verify
  // pass), by repo path. A file listed with its current size is not read again for its
  // LFS object id (only its first 512 bytes, for preupload); the server still checks the
  // hash of every byte it receives.
  struct KnownDigest {
    uint64_t size = 0;
    std::string sha256;
  };
  std::map<std::string, KnownDigest> known_sha256;

  // A check that runs beside the upload (push_model: df11 verify). Nothing is committed
  // before verdict() says OK, so objects can go up while the folder is still being checked:
  // an LFS object is not part of the repository until a commit names it.
  struct Gate {
    // The SHA-256 of `path` (repo path) once the check has computed it, blocking until it
    // has or knows it will not; nullopt: push hashes the file itself. Thread-safe.
    std::function<std::optional<std::string>(const std::string& path)> sha256;
    // Blocks until the check is over; an error stops the push before its commit and is
    // what push_folder returns.
    std::function<Status()> verdict;
  };
  std::optional<Gate> gate;
  // Files uploaded as if they were in the folder (push_model's generated model card), sent
  // as regular (non-LFS) files; a folder file of the same path is an error.
  struct ExtraFile {
    std::string path;
    std::string content;
  };
  std::vector<ExtraFile> extra_files;
  // The caller made the repository already (prepare_repo): no whoami and no create.
  bool repo_ready = false;
  // The files at ref.revision before this push (check_push_target, or list_repo after
  // creating the repository). With it, the push makes the revision hold exactly the folder's
  // weights: every remote weight file (is_weight_file) the folder does not have is deleted in
  // the same commit, files whose bytes the revision has already are left out of the commit,
  // and when nothing differs nothing is committed (PushResult::up_to_date). The commit names
  // this listing's commit as its parent, so a revision that moved meanwhile is refused
  // rather than overwritten. Without it every file is committed and nothing is deleted.
  std::optional<RemoteListing> remote;
  // Called after each commit the push makes, with its oid (may be empty): a caller that
  // must know whether a failed push committed part of a large folder counts them here.
  std::function<void(const std::string& oid)> on_commit;
};

struct PushResult {
  std::string commit_oid;  // the new head (up_to_date: the revision's unchanged head)
  std::string commit_url;
  std::string pr_url;  // empty unless create_pr
  int files = 0;
  int lfs_uploaded = 0;        // LFS objects sent
  int lfs_already_stored = 0;  // LFS objects the server already had (resumed push)
  int commits = 0;
  uint64_t bytes_uploaded = 0;
  int files_hashed = 0;          // files whose SHA-256 push computed (not given in known_sha256)
  double transfer_seconds = 0;   // preupload, hashing, LFS batch, uploads and commits
  double gate_wait_seconds = 0;  // waiting for PushOptions::Gate (digests and the verdict)
  int files_committed = 0;       // files added or changed by the commits
  std::vector<std::string> deleted;  // remote weight files the commits deleted, sorted
  bool up_to_date = false;           // the revision held the folder already: nothing was committed
};

// True for the files a loader reads weights from: "*.safetensors" and
// "*.safetensors.index.json", at any depth. push deletes those the folder does not have.
bool is_weight_file(std::string_view repo_path);

// What pushing to `ref` would meet, found before anything is uploaded or created: the token
// is checked (whoami: kInvalidArgument when it is rejected, read-only, or its user is not
// the target's namespace nor a member of that organisation), then the repository and its
// revision are listed. kNotFound (RevisionNotFound) when the repository exists without
// ref.revision; kInvalidArgument for a revision other than "main" of a repository that does
// not exist yet (a new repository has only "main"). Creates nothing.
struct PushTarget {
  std::string user;                      // the token's account
  bool exists = false;                   // the repository exists
  std::optional<RemoteListing> listing;  // exists: the files at ref.revision
};
Result<PushTarget> check_push_target(const HubConfig& config, const RepoRef& ref,
                                     const TransferControl& control);

// Checks the token (whoami) and creates the repository: true when this call created it,
// false when it existed already.
Result<bool> prepare_repo(const HubConfig& config, const std::string& repo_id, bool private_repo,
                          const TransferControl& control);

// Deletes a repository (DELETE /api/repos/delete). Irreversible: push_model calls it only
// for a repository its own prepare_repo created moments before, when the folder it was
// pushing failed verification, so that a refused folder leaves nothing on the Hub.
Status delete_created_repo(const HubConfig& config, const std::string& repo_id,
                           const TransferControl& control);

// Checks the token and creates the repository unless `repo_ready`, asks which files go
// through LFS, hashes the files whose SHA-256 it is not given, uploads the LFS objects the
// server lacks (basic or multipart; each as soon as its SHA-256 is known), then commits. The
// commit is made only after every object is stored and the gate's verdict is OK: an
// interrupted or refused push leaves no commit, and the next one re-sends only the objects
// the server lacks.
Result<PushResult> push_folder(const HubConfig& config, const PushOptions& options,
                               const TransferControl& control);

// ---- remote reads: parts of a repo's files, without downloading them (remote inspect) ----
// GET /api/models/{repo}/revision/{rev}?blobs=true, as pull lists a repo: the commit and
// every file (paths checked with is_safe_repo_path, sizes and etags checked).
Result<RemoteListing> list_repo(const HubConfig& config, const RepoRef& ref,
                                const TransferControl& control);

// One byte range of a listed file.
struct ByteRange {
  std::string path;     // a file of the listing
  uint64_t offset = 0;  // bytes from the file's start
  uint64_t length = 0;  // bytes, 1 .. kMaxRangeBytes, offset + length <= the file's size
};
// The most one range may ask for: a safetensors header (at most 100 MB, spec 6.3) fits.
inline constexpr uint64_t kMaxRangeBytes = 128ull << 20;

// What read_ranges cost, for the report ("read 81 KiB of 3 GB in 12 requests"), and what it
// learnt: the CDN URL each file's resolve URL redirected to, which later reads of the same
// file in the same session GET directly (one request per range instead of two; a refused
// cached URL, e.g. an expired signature, is resolved again).
struct RangeStats {
  uint64_t bytes_received = 0;  // response body bytes kept (redirect bodies not counted)
  uint64_t requests = 0;        // GETs sent, redirects and retries included
  std::map<std::string, std::string> locations;  // repo path -> CDN URL (never printed)
};

// GETs each range of `listing`'s files at `listing.commit` with "Range: bytes=a-b" on the
// resolve URL, following the redirect to the CDN by hand (Authorization goes to the
// endpoint's origin only), on up to control.threads connections. Each answer must be a 206
// whose Content-Range names exactly the range, with exactly `length` bytes (kCorruptData
// otherwise). A 200 (the server ignored Range) is refused as soon as its headers arrive,
// with kUnsupported, unless the range is the whole file: a server that ignores Range never
// makes this download a whole weight file. kInvalidArgument for a range that is not inside a
// listed file or is longer than kMaxRangeBytes. Returns the bytes of each range, in order;
// `stats` (may be null) is added to and its locations are used and filled.
Result<std::vector<std::string>> read_ranges(const HubConfig& config, const std::string& repo_id,
                                             const RemoteListing& listing,
                                             const std::vector<ByteRange>& ranges,
                                             const TransferControl& control, RangeStats* stats);

// GET /api/whoami-v2: the account name the token belongs to (kInvalidArgument if rejected).
Result<std::string> whoami(const HubConfig& config, const TransferControl& control);

// The cache folder name of a model repo: "models--org--name".
std::string repo_folder_name(std::string_view repo_id);

}  // namespace df11::hub
