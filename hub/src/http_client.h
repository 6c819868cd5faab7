// One libcurl easy handle per worker, reused across requests (keep-alive), and the retry loop
// that every Hub call goes through. Internal to df11_hub.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "df11/hub/hub.h"
#include "df11/status.h"

namespace df11::hub {

// scheme://host[:port] of an absolute http(s) URL, lowercased; empty if it is not one.
std::string url_origin(std::string_view url);
// kInvalidArgument unless `url` is https://, or http:// to a loopback host (127.0.0.1,
// localhost, [::1]).
Status check_url_allowed(std::string_view url);
// Percent-encodes one path segment or query value (RFC 3986 unreserved stay as they are);
// keep_slash leaves '/' alone (repo paths).
std::string url_escape(std::string_view text, bool keep_slash);

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // lowercased names, last response only
  std::string body;
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// Which of HubConfig's timeouts applies to a request: how long connecting may take and how
// long the connection may stay silent before the attempt fails (and is retried).
enum class TimeoutKind {
  kMetadata,  // listings, HEAD, whoami, preupload, LFS batch, create, delete: etag timeout
  kTransfer,  // file bytes (downloads, range reads, LFS uploads): download timeout
  kCommit,    // a commit, which the Hub may take a while to answer: the download timeout,
              // at least kMinCommitAnswerSeconds
};
inline constexpr double kMinCommitAnswerSeconds = 120;

struct HttpRequest {
  std::string method = "GET";  // GET, HEAD, POST, PUT
  std::string url;
  TimeoutKind timeout = TimeoutKind::kMetadata;
  std::vector<std::string> headers;  // "Name: value"
  // Adds "authorization: Bearer <token>" only when the URL's origin is the endpoint's.
  bool auth = true;
  // Body: in memory, or `upload_length` bytes read from `upload_fd` at `upload_offset`.
  const std::string* body = nullptr;
  int upload_fd = -1;
  uint64_t upload_offset = 0;
  uint64_t upload_length = 0;
  // Response body: kept in memory up to `max_body` bytes (more is an error), unless `sink`
  // is set, which receives every chunk (a non-OK Status aborts the transfer).
  size_t max_body = 16u << 20;
  std::function<Status(std::span<const uint8_t>)> sink;
  // Called when a 2xx body starts, before its first byte reaches `sink` (a non-OK Status
  // aborts the transfer): where a download checks 200 against 206.
  std::function<Status(const HttpResponse& headers, long status)> on_start;
  // Called before each retry (a download moves its Range header forward here).
  std::function<void()> on_retry;
  // Bytes sent or received so far, for progress (called from the transfer).
  std::function<void(uint64_t now)> on_bytes;
};

class HttpSession {
 public:
  // `abort` (may be null) stops this session's transfers like the caller's cancel flag does:
  // the first failing worker of a parallel operation sets it to stop the others.
  HttpSession(const HubConfig& config, const TransferControl& control,
              const std::atomic<bool>* abort = nullptr);
  ~HttpSession();
  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;

  // One attempt, no retry: kIo for a transport failure (message "network: ..." says which:
  // "connection refused", "no answer for 10 s (HF_HUB_ETAG_TIMEOUT)", ...), kInterrupted when
  // cancelled, kIo naming HF_HUB_OFFLINE without any request when the config is offline.
  // Any HTTP status is returned as a response.
  Result<HttpResponse> perform(const HttpRequest& request);

  // Retries 408/429/500/502/503/504 (up to control.max_attempts attempts, waiting at least
  // Retry-After, capped at 60 s) and transport failures (up to kMaxUnansweredAttempts when
  // the attempt received nothing: a refused connection, a failed lookup or a silent server
  // is rarely cured by waiting; up to max_attempts when it did), with exponential backoff,
  // announcing each retry through control.on_retry; then maps a non-2xx/3xx answer to a
  // Status through http_error(). `what` names the step for messages ("HEAD config.json").
  Result<HttpResponse> send(const HttpRequest& request, const std::string& what);

  // Sleeps `seconds`, waking early on cancellation (kInterrupted).
  Status backoff_sleep(double seconds) const;
  bool cancelled() const;
  const HubConfig& config() const { return config_; }
  const TransferControl& control() const { return control_; }

 private:
  const HubConfig& config_;
  const TransferControl& control_;
  const std::atomic<bool>* abort_;
  std::string endpoint_origin_;
  void* curl_ = nullptr;        // CURL*
  bool last_received_ = false;  // the latest perform() received response bytes
};

// Attempts of a request whose attempts receive nothing at all (HttpSession::send).
inline constexpr int kMaxUnansweredAttempts = 3;

// "0.5 s", "2 s", "1.5 s": a wait or a timeout for messages.
std::string seconds_text(double seconds);

// A Status for a non-success response: the X-Error-Code (RepoNotFound, RevisionNotFound,
// EntryNotFound -> kNotFound; GatedRepo, 401, 403 -> kInvalidArgument) and X-Error-Message,
// sanitised (no control characters, at most 300 bytes).
Status http_error(const HttpResponse& response, const std::string& what);

// True for 408, 429, 500, 502, 503, 504.
bool is_retryable_status(long status);

// Retry-After in seconds (delta-seconds form only; an HTTP date counts as absent: -1).
double parse_retry_after(std::string_view value);

}  // namespace df11::hub
