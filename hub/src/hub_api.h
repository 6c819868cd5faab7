// The Hub protocol, one function per step (as huggingface_hub's file_download.py and
// _commit_api.py split it). Every value the server sends is checked here before use.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "df11/hub/hub.h"
#include "http_client.h"

namespace df11::hub {

// Parses a server answer: at most `max_bytes`, nesting at most 32 levels (kBadJson naming
// `what` otherwise).
Result<nlohmann::json> parse_server_json(const std::string& body, const std::string& what,
                                         size_t max_bytes = 16u << 20);

// ---- download steps ----
struct FileMetadata {
  std::string commit;    // X-Repo-Commit
  std::string etag;      // X-Linked-Etag or ETag, W/ and quotes stripped
  uint64_t size = 0;     // X-Linked-Size or Content-Length
  std::string location;  // where to GET the bytes (the CDN URL, or the resolve URL)
};

std::string resolve_url(const HubConfig& config, const RepoRef& ref, const std::string& path);

// HEAD {EP}/{repo}/resolve/{rev}/{path} with Accept-Encoding: identity, following relative
// redirects only (at most 5).
Result<FileMetadata> head_file(HttpSession& session, const RepoRef& ref, const std::string& path);

// GET /api/models/{repo}/revision/{rev}?blobs=true: the commit and every file (paths checked
// with is_safe_repo_path, sizes and etags present and well formed).
Result<RemoteListing> get_revision(HttpSession& session, const RepoRef& ref);

// "W/\"abc\"" -> "abc".
std::string normalize_etag(std::string_view etag);

// ---- upload steps ----
// POST /api/repos/create; an existing repository (409) is success. True when this call
// created it.
Result<bool> create_repo(HttpSession& session, const std::string& repo_id, bool private_repo);
// DELETE /api/repos/delete (huggingface_hub's delete_repo).
Status delete_repo(HttpSession& session, const std::string& repo_id);

struct PreuploadFile {
  std::string path;
  uint64_t size = 0;
  std::string sample;  // the first 512 bytes
};
// POST /api/models/{repo}/preupload/{rev} (<= 256 files per call): true = LFS for each file,
// in order.
Result<std::vector<bool>> preupload(HttpSession& session, const RepoRef& ref,
                                    const std::vector<PreuploadFile>& files, bool create_pr);

struct LfsObject {
  std::string oid;  // sha256 hex
  uint64_t size = 0;
};
struct LfsAction {
  std::string oid;
  uint64_t size = 0;
  bool stored = false;  // no actions: the server has it
  std::string upload_href;
  std::vector<std::string> part_urls;  // multipart, in part order
  uint64_t chunk_size = 0;             // multipart
  std::string verify_href;             // may be empty
};
// POST {EP}/{repo}.git/info/lfs/objects/batch (git-lfs media types).
Result<std::vector<LfsAction>> lfs_batch(HttpSession& session, const RepoRef& ref,
                                         const std::vector<LfsObject>& objects);

// The bytes of `action` from the open file `fd` (basic PUT, or multipart parts + completion),
// then the verify call when the server asked for one. `on_bytes` gets the bytes sent so far
// of this object.
Status lfs_upload(HttpSession& session, const LfsAction& action, int fd,
                  const std::function<void(uint64_t)>& on_bytes);

struct CommitFile {
  std::string path;
  bool deleted = false;  // a deletedFile operation: only `path` is used
  bool lfs = false;
  std::string oid;      // lfs
  uint64_t size = 0;    // lfs
  std::string content;  // regular: the bytes
};
struct CommitResult {
  std::string oid;
  std::string url;
  std::string pr_url;
};
// POST /api/models/{repo}/commit/{rev} (application/x-ndjson). `parent_commit` (empty: none)
// makes the server refuse the commit when the revision's head is another commit.
Result<CommitResult> commit(HttpSession& session, const RepoRef& ref, const std::string& summary,
                            const std::vector<CommitFile>& files, bool create_pr,
                            const std::string& parent_commit = "");

// GET /api/whoami-v2: the token's account, its organisations (orgs_listed: the answer had
// the list) and the token's role ("read", "write", "fineGrained"; empty when not given).
struct WhoAmI {
  std::string name;
  std::vector<std::string> orgs;
  bool orgs_listed = false;
  std::string role;
};
Result<WhoAmI> whoami(HttpSession& session);

// kInvalidArgument naming where a token comes from when `config` has none: the first check of
// every write (push_folder, check_push_target).
Status require_token(const HubConfig& config);

}  // namespace df11::hub
