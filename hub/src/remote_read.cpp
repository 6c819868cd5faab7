// df11::hub::list_repo and read_ranges: the parts of a repo's files that remote inspect needs
// (safetensors headers, small side files, a bounded sample of weights), with HTTP Range
// requests on the same resolve URL and CDN redirect that pull downloads through.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>

#include "df11/hub/hub.h"
#include "hub_api.h"
#include "parallel_transfers.h"

namespace df11::hub {
namespace {

constexpr int kMaxRedirects = 5;

// "bytes A-B/T" exactly as asked.
bool content_range_matches(const std::string& value, uint64_t first, uint64_t last,
                           uint64_t total) {
  return value == "bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" +
                      std::to_string(total);
}

// One range: GET with Range, redirects followed by hand, the answer checked before its
// bytes are kept.
Result<std::string> read_one(HttpSession& session, const std::string& repo_id,
                             const std::string& commit, const RemoteFile& file,
                             const ByteRange& range, std::atomic<uint64_t>& requests,
                             std::string& location) {
  const uint64_t last = range.offset + range.length - 1;
  const std::string what = "GET " + repo_id + "/" + file.path + " bytes " +
                           std::to_string(range.offset) + "-" + std::to_string(last);
  const std::string resolve = resolve_url(session.config(), RepoRef{repo_id, commit}, file.path);
  // `location`: where an earlier read of this file was redirected (empty: not known yet).
  bool cached = !location.empty();
  HttpRequest request;
  request.timeout = TimeoutKind::kTransfer;
  request.url = cached ? location : resolve;
  request.headers = {"Range: bytes=" + std::to_string(range.offset) + "-" + std::to_string(last),
                     "Accept-Encoding: identity"};
  std::string out;
  request.on_retry = [&] {
    out.clear();
    requests.fetch_add(1);
  };
  request.on_start = [&](const HttpResponse& headers, long status) -> Status {
    out.clear();
    if (status == 206) {
      if (!content_range_matches(headers.header("content-range"), range.offset, last, file.size)) {
        return Status(ErrorCode::kCorruptData,
                      what + ": the server answered a different range (Content-Range '" +
                          headers.header("content-range").substr(0, 80) + "')");
      }
      return Status::ok();
    }
    if (status == 200 && range.offset == 0 && range.length == file.size) return Status::ok();
    // The whole file would follow: stop before its body instead of reading gigabytes.
    return Status(ErrorCode::kUnsupported,
                  what + ": the server ignored the Range request (HTTP " + std::to_string(status) +
                      " instead of 206): refusing to download the whole file; use df11 pull");
  };
  request.sink = [&](std::span<const uint8_t> bytes) -> Status {
    if (out.size() + bytes.size() > range.length) {
      return Status(ErrorCode::kCorruptData, what + ": the server sent more than the " +
                                                 std::to_string(range.length) + " bytes asked for");
    }
    out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return Status::ok();
  };
  for (int hop = 0;; ++hop) {
    requests.fetch_add(1);
    Result<HttpResponse> answer = session.send(request, what);
    if (!answer && cached &&
        (answer.status().code() == ErrorCode::kInvalidArgument ||
         answer.status().code() == ErrorCode::kNotFound)) {
      // A CDN URL from an earlier read that the CDN refuses now (a 4xx: an expired
      // signature): resolve again, once.
      cached = false;
      location.clear();
      request.url = resolve;
      hop = -1;
      continue;
    }
    DF11_ASSIGN_OR_RETURN(HttpResponse response, std::move(answer));
    if (response.status >= 300 && response.status < 400) {
      // Relative: the Hub itself (a renamed repo); absolute: the CDN, where the bytes are.
      // perform() drops Authorization for any origin but the endpoint's.
      const std::string target = response.header("location");
      if (target.empty()) return Status(ErrorCode::kBadJson, what + ": redirect without Location");
      if (hop >= kMaxRedirects) return Status(ErrorCode::kIo, what + ": too many redirects");
      if (target[0] == '/' && (target.size() < 2 || target[1] != '/')) {
        request.url = url_origin(request.url) + target;
      } else {
        DF11_RETURN_IF_ERROR(check_url_allowed(target).with_context(what));
        request.url = target;
        location = target;
      }
      continue;
    }
    if (response.status < 200 || response.status >= 300) return http_error(response, what);
    if (out.size() != range.length) {
      return Status(ErrorCode::kCorruptData, what + ": received " + std::to_string(out.size()) +
                                                 " bytes, asked for " +
                                                 std::to_string(range.length));
    }
    return out;
  }
}

}  // namespace

Result<RemoteListing> list_repo(const HubConfig& config, const RepoRef& ref,
                                const TransferControl& control) {
  HttpSession session(config, control);
  return get_revision(session, ref);
}

Result<std::vector<std::string>> read_ranges(const HubConfig& config, const std::string& repo_id,
                                             const RemoteListing& listing,
                                             const std::vector<ByteRange>& ranges,
                                             const TransferControl& control, RangeStats* stats) {
  std::map<std::string, const RemoteFile*> by_path;
  for (const RemoteFile& f : listing.files) by_path.emplace(f.path, &f);
  std::vector<const RemoteFile*> files;
  for (const ByteRange& r : ranges) {
    const auto it = by_path.find(r.path);
    if (it == by_path.end()) {
      return Status(ErrorCode::kInvalidArgument, repo_id + ": no file '" + r.path + "' to read");
    }
    if (r.length == 0 || r.length > kMaxRangeBytes || r.offset > it->second->size ||
        r.length > it->second->size - r.offset) {
      return Status(ErrorCode::kInvalidArgument,
                    repo_id + "/" + r.path + ": bytes " + std::to_string(r.offset) + " + " +
                        std::to_string(r.length) + " are not a range of its " +
                        std::to_string(it->second->size) + " bytes (or more than " +
                        std::to_string(kMaxRangeBytes) + " at once)");
    }
    files.push_back(it->second);
  }
  std::vector<std::string> out(ranges.size());
  std::atomic<uint64_t> requests{0};
  std::mutex mutex;  // guards `locations`
  std::map<std::string, std::string> locations;
  if (stats) locations = stats->locations;
  Status s =
      run_parallel(config, control, ranges.size(), [&](HttpSession& worker, size_t i) -> Status {
        std::string location;
        {
          std::lock_guard<std::mutex> lock(mutex);
          const auto it = locations.find(ranges[i].path);
          if (it != locations.end()) location = it->second;
        }
        const std::string before = location;
        DF11_ASSIGN_OR_RETURN(out[i], read_one(worker, repo_id, listing.commit, *files[i],
                                               ranges[i], requests, location));
        if (location != before) {
          std::lock_guard<std::mutex> lock(mutex);
          locations[ranges[i].path] = location;
        }
        return Status::ok();
      });
  if (stats) {
    stats->requests += requests.load();
    for (const std::string& bytes : out) stats->bytes_received += bytes.size();
    stats->locations = std::move(locations);
  }
  DF11_RETURN_IF_ERROR(s);
  return out;
}

}  // namespace df11::hub
