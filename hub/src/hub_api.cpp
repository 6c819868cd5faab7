#include "hub_api.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdlib>

#include "df11/hash.h"

namespace df11::hub {
namespace {

using nlohmann::json;

constexpr int kMaxJsonDepth = 32;
constexpr int kMaxRedirects = 5;
constexpr uint64_t kMaxFileSize = 50ull << 30;  // the Hub's limit per file (50 GB)
const char* kLfsMedia = "application/vnd.git-lfs+json";

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string api_base(const HubConfig& config, const std::string& repo_id) {
  return config.endpoint + "/api/models/" + repo_id;
}

bool parse_u64(const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 19) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  *out = std::strtoull(text.c_str(), nullptr, 10);
  return true;
}

bool json_size(const json& v, uint64_t* out) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) return false;
  *out = v.get<uint64_t>();
  return *out <= kMaxFileSize;
}

// An href the server sent: absolute, and allowed (https, or http to loopback).
Status check_href(const json& v, const std::string& what, std::string* out) {
  if (!v.is_string()) return Status(ErrorCode::kBadJson, what + ": href is not a string");
  *out = v.get<std::string>();
  DF11_RETURN_IF_ERROR(check_url_allowed(*out).with_context(what));
  return Status::ok();
}

}  // namespace

Result<json> parse_server_json(const std::string& body, const std::string& what, size_t max_bytes) {
  if (body.size() > max_bytes) {
    return Status(ErrorCode::kResourceLimit,
                  what + ": answer larger than " + std::to_string(max_bytes) + " bytes");
  }
  try {
    bool too_deep = false;
    json::parser_callback_t limit = [&too_deep](int depth, json::parse_event_t, json&) {
      if (depth > kMaxJsonDepth) too_deep = true;
      return !too_deep;
    };
    json j = json::parse(body, limit);
    if (too_deep) return Status(ErrorCode::kBadJson, what + ": JSON nested too deeply");
    return j;
  } catch (const std::exception& e) {
    return Status(ErrorCode::kBadJson, what + ": the server's answer is not JSON");
  }
}

std::string normalize_etag(std::string_view etag) {
  if (etag.rfind("W/", 0) == 0) etag.remove_prefix(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return std::string(etag);
}

std::string resolve_url(const HubConfig& config, const RepoRef& ref, const std::string& path) {
  return config.endpoint + "/" + ref.repo_id + "/resolve/" + url_escape(ref.revision, false) + "/" +
         url_escape(path, true);
}

Result<FileMetadata> head_file(HttpSession& session, const RepoRef& ref, const std::string& path) {
  HttpRequest request;
  request.method = "HEAD";
  request.url = resolve_url(session.config(), ref, path);
  request.headers = {"Accept-Encoding: identity"};
  const std::string what = "HEAD " + ref.repo_id + "/" + path;
  for (int hop = 0;; ++hop) {
    DF11_ASSIGN_OR_RETURN(HttpResponse response, session.send(request, what));
    std::string location = response.header("location");
    const bool redirect = response.status >= 300 && response.status < 400;
    // Relative redirects stay on the Hub (a renamed repo): follow them by hand. An absolute
    // one is the CDN: it is where the GET goes, not something to HEAD.
    if (redirect && !location.empty() && location[0] == '/' &&
        (location.size() < 2 || location[1] != '/')) {
      if (hop >= kMaxRedirects) return Status(ErrorCode::kIo, what + ": too many redirects");
      request.url = url_origin(request.url) + location;
      continue;
    }
    FileMetadata meta;
    meta.commit = response.header("x-repo-commit");
    std::string etag = response.header("x-linked-etag");
    if (etag.empty()) etag = response.header("etag");
    meta.etag = normalize_etag(etag);
    std::string size = response.header("x-linked-size");
    if (size.empty() && !redirect) size = response.header("content-length");
    if (!is_lower_hex(meta.commit, 40)) {
      return Status(ErrorCode::kBadJson, what + ": no valid X-Repo-Commit in the answer");
    }
    if (!(is_lower_hex(meta.etag, 40) || is_lower_hex(meta.etag, 64))) {
      return Status(ErrorCode::kBadJson, what + ": the ETag is not a git or SHA-256 hash");
    }
    if (!parse_u64(size, &meta.size) || meta.size > kMaxFileSize) {
      return Status(ErrorCode::kBadJson, what + ": no valid file size in the answer");
    }
    if (redirect) {
      if (location.empty())
        return Status(ErrorCode::kBadJson, what + ": redirect without Location");
      DF11_RETURN_IF_ERROR(check_url_allowed(location).with_context(what));
      meta.location = location;
    } else {
      meta.location = request.url;
    }
    return meta;
  }
}

Result<RemoteListing> get_revision(HttpSession& session, const RepoRef& ref) {
  HttpRequest request;
  request.url = api_base(session.config(), ref.repo_id) + "/revision/" +
                url_escape(ref.revision, false) + "?blobs=true";
  const std::string what = "list " + ref.repo_id + "@" + ref.revision;
  DF11_ASSIGN_OR_RETURN(HttpResponse response, session.send(request, what));
  DF11_ASSIGN_OR_RETURN(json j, parse_server_json(response.body, what));
  RemoteListing listing;
  if (!j.is_object() || !j.contains("sha") || !j["sha"].is_string() ||
      !is_lower_hex(j["sha"].get<std::string>(), 40)) {
    return Status(ErrorCode::kBadJson, what + ": no valid commit 'sha' in the answer");
  }
  listing.commit = j["sha"].get<std::string>();
  if (!j.contains("siblings") || !j["siblings"].is_array()) {
    return Status(ErrorCode::kBadJson, what + ": no 'siblings' list in the answer");
  }
  for (const json& s : j["siblings"]) {
    if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string()) {
      return Status(ErrorCode::kBadJson, what + ": a sibling without 'rfilename'");
    }
    RemoteFile f;
    f.path = s["rfilename"].get<std::string>();
    if (!is_safe_repo_path(f.path)) {
      std::string shown;
      for (char c : f.path.substr(0, 100))
        shown += (static_cast<unsigned char>(c) < 0x20 ? '?' : c);
      return Status(ErrorCode::kBadJson,
                    what + ": unsafe file name '" + shown +
                        "' (absolute, '..', or a control character): refusing the repository");
    }
    if (s.contains("lfs") && s["lfs"].is_object()) {
      const json& lfs = s["lfs"];
      f.lfs = true;
      if (!lfs.contains("sha256") || !lfs["sha256"].is_string() ||
          !is_lower_hex(lfs["sha256"].get<std::string>(), 64) || !lfs.contains("size") ||
          !json_size(lfs["size"], &f.size)) {
        return Status(ErrorCode::kBadJson, what + ": " + f.path + ": bad 'lfs' entry");
      }
      f.etag = lfs["sha256"].get<std::string>();
    } else {
      if (!s.contains("size") || !json_size(s["size"], &f.size) || !s.contains("blobId") ||
          !s["blobId"].is_string() || !is_lower_hex(s["blobId"].get<std::string>(), 40)) {
        return Status(ErrorCode::kBadJson, what + ": " + f.path + ": no valid size and blobId");
      }
      f.etag = s["blobId"].get<std::string>();
    }
    listing.files.push_back(std::move(f));
  }
  std::sort(listing.files.begin(), listing.files.end(),
            [](const RemoteFile& a, const RemoteFile& b) { return a.path < b.path; });
  for (size_t i = 1; i < listing.files.size(); ++i) {
    if (listing.files[i].path == listing.files[i - 1].path) {
      return Status(ErrorCode::kBadJson,
                    what + ": file '" + listing.files[i].path + "' listed twice");
    }
  }
  return listing;
}

Result<bool> create_repo(HttpSession& session, const std::string& repo_id, bool private_repo) {
  const size_t slash = repo_id.find('/');
  json body = {{"name", repo_id.substr(slash + 1)},
               {"organization", repo_id.substr(0, slash)},
               {"private", private_repo},
               {"type", "model"}};
  const std::string text = body.dump();
  HttpRequest request;
  request.method = "POST";
  request.url = session.config().endpoint + "/api/repos/create";
  request.headers = {"Content-Type: application/json"};
  request.body = &text;
  Result<HttpResponse> r = session.send(request, "create " + repo_id);
  if (r.is_ok()) return true;
  // 409: it exists already, which is what we want.
  if (r.status().message().find("(HTTP 409") != std::string::npos) return false;
  return r.status();
}

Status delete_repo(HttpSession& session, const std::string& repo_id) {
  const size_t slash = repo_id.find('/');
  const std::string text = json{
      {"name", repo_id.substr(slash + 1)},
      {"organization", repo_id.substr(0, slash)},
      {"type", "model"}}.dump();
  HttpRequest request;
  request.method = "DELETE";
  request.url = session.config().endpoint + "/api/repos/delete";
  request.headers = {"Content-Type: application/json"};
  request.body = &text;
  return session.send(request, "delete " + repo_id).status();
}

Result<std::vector<bool>> preupload(HttpSession& session, const RepoRef& ref,
                                    const std::vector<PreuploadFile>& files, bool create_pr) {
  json list = json::array();
  for (const PreuploadFile& f : files) {
    list.push_back({{"path", f.path}, {"size", f.size}, {"sample", base64(f.sample)}});
  }
  const std::string text = json{{"files", list}}.dump();
  HttpRequest request;
  request.method = "POST";
  request.url = api_base(session.config(), ref.repo_id) + "/preupload/" +
                url_escape(ref.revision, false) + (create_pr ? "?create_pr=1" : "");
  request.headers = {"Content-Type: application/json"};
  request.body = &text;
  const std::string what = "preupload " + ref.repo_id;
  DF11_ASSIGN_OR_RETURN(HttpResponse response, session.send(request, what));
  DF11_ASSIGN_OR_RETURN(json j, parse_server_json(response.body, what));
  if (!j.is_object() || !j.contains("files") || !j["files"].is_array()) {
    return Status(ErrorCode::kBadJson, what + ": no 'files' list in the answer");
  }
  std::vector<bool> lfs(files.size(), false);
  std::vector<bool> seen(files.size(), false);
  for (const json& e : j["files"]) {
    if (!e.is_object() || !e.contains("path") || !e["path"].is_string() ||
        !e.contains("uploadMode") || !e["uploadMode"].is_string()) {
      return Status(ErrorCode::kBadJson, what + ": bad entry in 'files'");
    }
    const std::string path = e["path"].get<std::string>();
    const std::string mode = e["uploadMode"].get<std::string>();
    auto it = std::find_if(files.begin(), files.end(),
                           [&](const PreuploadFile& f) { return f.path == path; });
    if (it == files.end() || (mode != "lfs" && mode != "regular")) {
      return Status(ErrorCode::kBadJson,
                    what + ": unexpected entry for '" + path.substr(0, 100) + "'");
    }
    const size_t i = static_cast<size_t>(it - files.begin());
    lfs[i] = mode == "lfs";
    seen[i] = true;
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (!seen[i])
      return Status(ErrorCode::kBadJson, what + ": no upload mode for " + files[i].path);
  }
  return lfs;
}

Result<std::vector<LfsAction>> lfs_batch(HttpSession& session, const RepoRef& ref,
                                         const std::vector<LfsObject>& objects) {
  json list = json::array();
  for (const LfsObject& o : objects) list.push_back({{"oid", o.oid}, {"size", o.size}});
  json body = {{"operation", "upload"},
               {"transfers", {"basic", "multipart"}},
               {"objects", list},
               {"hash_algo", "sha256"}};
  if (ref.revision != "main") body["ref"] = {{"name", ref.revision}};
  const std::string text = body.dump();
  HttpRequest request;
  request.method = "POST";
  request.url = session.config().endpoint + "/" + ref.repo_id + ".git/info/lfs/objects/batch";
  request.headers = {std::string("Accept: ") + kLfsMedia,
                     std::string("Content-Type: ") + kLfsMedia};
  request.body = &text;
  const std::string what = "LFS batch " + ref.repo_id;
  DF11_ASSIGN_OR_RETURN(HttpResponse response, session.send(request, what));
  DF11_ASSIGN_OR_RETURN(json j, parse_server_json(response.body, what));
  if (!j.is_object() || !j.contains("objects") || !j["objects"].is_array()) {
    return Status(ErrorCode::kBadJson, what + ": no 'objects' list in the answer");
  }
  std::vector<LfsAction> actions;
  for (const LfsObject& want : objects) {
    const json* found = nullptr;
    for (const json& o : j["objects"]) {
      if (o.is_object() && o.contains("oid") && o["oid"] == want.oid) found = &o;
    }
    if (!found)
      return Status(ErrorCode::kBadJson,
                    what + ": object " + want.oid + " missing from the answer");
    const json& o = *found;
    uint64_t size = 0;
    if (!o.contains("size") || !json_size(o["size"], &size) || size != want.size) {
      return Status(ErrorCode::kBadJson, what + ": object " + want.oid + ": size differs");
    }
    if (o.contains("error")) {
      std::string message = "error";
      if (o["error"].is_object() && o["error"].contains("message") &&
          o["error"]["message"].is_string()) {
        message = o["error"]["message"].get<std::string>().substr(0, 200);
      }
      return Status(ErrorCode::kIo, what + ": object " + want.oid + ": " + message);
    }
    LfsAction a;
    a.oid = want.oid;
    a.size = want.size;
    if (!o.contains("actions") || o["actions"].is_null()) {
      a.stored = true;
      actions.push_back(std::move(a));
      continue;
    }
    const json& acts = o["actions"];
    if (!acts.is_object() || !acts.contains("upload") || !acts["upload"].is_object()) {
      return Status(ErrorCode::kBadJson, what + ": object " + want.oid + ": no upload action");
    }
    const json& up = acts["upload"];
    DF11_RETURN_IF_ERROR(check_href(up.value("href", json()), what, &a.upload_href));
    if (up.contains("header") && up["header"].is_object() && up["header"].contains("chunk_size")) {
      const json& header = up["header"];
      std::string chunk = header["chunk_size"].is_string() ? header["chunk_size"].get<std::string>()
                          : header["chunk_size"].is_number_unsigned()
                              ? std::to_string(header["chunk_size"].get<uint64_t>())
                              : std::string();
      if (!parse_u64(chunk, &a.chunk_size) || a.chunk_size == 0) {
        return Status(ErrorCode::kBadJson, what + ": object " + want.oid + ": bad chunk_size");
      }
      const uint64_t parts = (want.size + a.chunk_size - 1) / a.chunk_size;
      if (parts > 10000) return Status(ErrorCode::kBadJson, what + ": more than 10000 parts");
      for (uint64_t n = 1; n <= parts; ++n) {
        const std::string key = std::to_string(n);
        if (!header.contains(key)) {
          return Status(ErrorCode::kBadJson,
                        what + ": object " + want.oid + ": no URL for part " + key);
        }
        std::string url;
        DF11_RETURN_IF_ERROR(check_href(header[key], what, &url));
        a.part_urls.push_back(std::move(url));
      }
    }
    if (acts.contains("verify") && acts["verify"].is_object()) {
      DF11_RETURN_IF_ERROR(check_href(acts["verify"].value("href", json()), what, &a.verify_href));
    }
    actions.push_back(std::move(a));
  }
  return actions;
}

Status lfs_upload(HttpSession& session, const LfsAction& action, int fd,
                  const std::function<void(uint64_t)>& on_bytes) {
  const std::string what = "upload " + action.oid.substr(0, 12);
  if (action.part_urls.empty()) {
    HttpRequest put;
    put.timeout = TimeoutKind::kTransfer;
    put.method = "PUT";
    put.url = action.upload_href;
    put.upload_fd = fd;
    put.upload_length = action.size;
    put.on_bytes = on_bytes;
    DF11_RETURN_IF_ERROR(session.send(put, what).status());
  } else {
    json parts = json::array();
    for (size_t i = 0; i < action.part_urls.size(); ++i) {
      const uint64_t offset = action.chunk_size * i;
      HttpRequest put;
      put.timeout = TimeoutKind::kTransfer;
      put.method = "PUT";
      put.url = action.part_urls[i];
      put.upload_fd = fd;
      put.upload_offset = offset;
      put.upload_length = std::min(action.chunk_size, action.size - offset);
      put.on_bytes = [&](uint64_t now) {
        if (on_bytes) on_bytes(offset + now);
      };
      DF11_ASSIGN_OR_RETURN(HttpResponse r,
                            session.send(put, what + " part " + std::to_string(i + 1)));
      const std::string etag = r.header("etag");
      if (etag.empty() || etag.size() > 200) {
        return Status(ErrorCode::kBadJson, what + ": part " + std::to_string(i + 1) + ": no ETag");
      }
      parts.push_back({{"partNumber", i + 1}, {"etag", etag}});
    }
    const std::string text = json{{"oid", action.oid}, {"parts", parts}}.dump();
    HttpRequest done;
    done.method = "POST";
    done.url = action.upload_href;
    done.headers = {std::string("Accept: ") + kLfsMedia, std::string("Content-Type: ") + kLfsMedia};
    done.body = &text;
    DF11_RETURN_IF_ERROR(session.send(done, what + " completion").status());
  }
  if (!action.verify_href.empty()) {
    const std::string text = json{{"oid", action.oid}, {"size", action.size}}.dump();
    HttpRequest verify;
    verify.method = "POST";
    verify.url = action.verify_href;
    verify.headers = {std::string("Accept: ") + kLfsMedia,
                      std::string("Content-Type: ") + kLfsMedia};
    verify.body = &text;
    DF11_RETURN_IF_ERROR(session.send(verify, what + " verify").status());
  }
  return Status::ok();
}

Result<CommitResult> commit(HttpSession& session, const RepoRef& ref, const std::string& summary,
                            const std::vector<CommitFile>& files, bool create_pr,
                            const std::string& parent_commit) {
  json header = {{"summary", summary}, {"description", ""}};
  if (!parent_commit.empty()) header["parentCommit"] = parent_commit;
  std::string body = json{{"key", "header"}, {"value", header}}.dump() + "\n";
  for (const CommitFile& f : files) {
    json line;
    if (f.deleted) {
      line = {{"key", "deletedFile"}, {"value", {{"path", f.path}}}};
    } else if (f.lfs) {
      line = {{"key", "lfsFile"},
              {"value", {{"path", f.path}, {"algo", "sha256"}, {"oid", f.oid}, {"size", f.size}}}};
    } else {
      line = {
          {"key", "file"},
          {"value", {{"path", f.path}, {"content", base64(f.content)}, {"encoding", "base64"}}}};
    }
    body += line.dump() + "\n";
  }
  HttpRequest request;
  request.timeout = TimeoutKind::kCommit;
  request.method = "POST";
  request.url = api_base(session.config(), ref.repo_id) + "/commit/" +
                url_escape(ref.revision, false) + (create_pr ? "?create_pr=1" : "");
  request.headers = {"Content-Type: application/x-ndjson"};
  request.body = &body;
  const std::string what = "commit to " + ref.repo_id + "@" + ref.revision;
  DF11_ASSIGN_OR_RETURN(HttpResponse response, session.send(request, what));
  DF11_ASSIGN_OR_RETURN(json j, parse_server_json(response.body, what));
  if (!j.is_object() || !j.contains("commitOid") || !j["commitOid"].is_string() ||
      !is_lower_hex(j["commitOid"].get<std::string>(), 40)) {
    return Status(ErrorCode::kBadJson, what + ": no valid 'commitOid' in the answer");
  }
  CommitResult result;
  result.oid = j["commitOid"].get<std::string>();
  if (j.contains("commitUrl") && j["commitUrl"].is_string())
    result.url = j["commitUrl"].get<std::string>();
  if (j.contains("pullRequestUrl") && j["pullRequestUrl"].is_string()) {
    result.pr_url = j["pullRequestUrl"].get<std::string>();
  }
  return result;
}

Result<bool> prepare_repo(const HubConfig& config, const std::string& repo_id, bool private_repo,
                          const TransferControl& control) {
  // A rejected token is reported as such before anything is created.
  DF11_RETURN_IF_ERROR(whoami(config, control).status());
  HttpSession session(config, control);
  return create_repo(session, repo_id, private_repo);
}

Status delete_created_repo(const HubConfig& config, const std::string& repo_id,
                           const TransferControl& control) {
  HttpSession session(config, control);
  return delete_repo(session, repo_id);
}

Result<WhoAmI> whoami(HttpSession& session) {
  if (!session.config().token) {
    return Status(ErrorCode::kInvalidArgument, "no Hub token: set HF_TOKEN or write HF_HOME/token");
  }
  HttpRequest request;
  request.url = session.config().endpoint + "/api/whoami-v2";
  DF11_ASSIGN_OR_RETURN(HttpResponse response, session.send(request, "whoami"));
  DF11_ASSIGN_OR_RETURN(nlohmann::json j, parse_server_json(response.body, "whoami"));
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) {
    return Status(ErrorCode::kBadJson, "whoami: no 'name' in the answer");
  }
  WhoAmI who;
  who.name = j["name"].get<std::string>();
  if (j.contains("orgs") && j["orgs"].is_array()) {
    who.orgs_listed = true;
    for (const json& org : j["orgs"]) {
      if (org.is_object() && org.contains("name") && org["name"].is_string()) {
        who.orgs.push_back(org["name"].get<std::string>());
      }
    }
  }
  const json* token = nullptr;
  if (j.contains("auth") && j["auth"].is_object() && j["auth"].contains("accessToken") &&
      j["auth"]["accessToken"].is_object()) {
    token = &j["auth"]["accessToken"];
  }
  if (token != nullptr && token->contains("role") && (*token)["role"].is_string()) {
    who.role = (*token)["role"].get<std::string>();
  }
  return who;
}

Result<std::string> whoami(const HubConfig& config, const TransferControl& control) {
  HttpSession session(config, control);
  DF11_ASSIGN_OR_RETURN(WhoAmI who, whoami(session));
  return who.name;
}

bool is_weight_file(std::string_view repo_path) {
  return repo_path.ends_with(".safetensors") || repo_path.ends_with(".safetensors.index.json");
}

Status require_token(const HubConfig& config) {
  if (config.token) return Status::ok();
  return Status(ErrorCode::kInvalidArgument,
                "push needs a Hub token with write access: set HF_TOKEN or write HF_HOME/token");
}

Result<PushTarget> check_push_target(const HubConfig& config, const RepoRef& ref,
                                     const TransferControl& control) {
  DF11_RETURN_IF_ERROR(require_token(config));
  HttpSession session(config, control);
  DF11_ASSIGN_OR_RETURN(WhoAmI who, whoami(session));
  PushTarget target;
  target.user = who.name;
  if (who.role == "read") {
    return Status(ErrorCode::kInvalidArgument, "the Hub token (HF_TOKEN or HF_HOME/token) of " +
                                                   who.name + " is read-only: pushing to " +
                                                   ref.repo_id + " needs one with write access");
  }
  const std::string owner = ref.repo_id.substr(0, ref.repo_id.find('/'));
  if (who.orgs_listed && owner != who.name &&
      std::find(who.orgs.begin(), who.orgs.end(), owner) == who.orgs.end()) {
    return Status(ErrorCode::kInvalidArgument,
                  ref.repo_id + ": the Hub token's account " + who.name + " is not '" + owner +
                      "' nor a member of that organisation: it cannot write there");
  }
  Result<RemoteListing> listing = get_revision(session, ref);
  if (listing) {
    target.exists = true;
    target.listing = std::move(listing).value();
    return target;
  }
  if (listing.status().code() != ErrorCode::kNotFound) return listing.status();
  // Is it the repository or only its revision that is missing?
  Result<RemoteListing> main = get_revision(session, RepoRef{ref.repo_id, "main"});
  if (main) return listing.status();  // the revision is missing: nothing to push onto
  if (main.status().code() != ErrorCode::kNotFound) return main.status();
  if (ref.revision != "main") {
    return Status(ErrorCode::kInvalidArgument,
                  ref.repo_id +
                      " does not exist yet, and a new repository has only the branch "
                      "main: push without --revision " +
                      ref.revision + " first, then create the branch");
  }
  return target;
}

}  // namespace df11::hub
