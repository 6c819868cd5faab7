#include "http_client.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

namespace df11::hub {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// What one transfer accumulates; the curl callbacks' user data.
struct Transfer {
  const HttpRequest* request = nullptr;
  const HttpSession* session = nullptr;
  HttpResponse response;
  long status = 0;  // of the response whose headers are being read
  bool body_started = false;
  Status failure;  // set by a callback that aborted the transfer
  uint64_t upload_pos = 0;
  bool received = false;  // a response byte arrived
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  t->received = true;
  std::string_view line(data, n);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new response (after a 100 Continue, say): keep only the last one's headers.
    t->response.headers.clear();
    const size_t sp = line.find(' ');
    t->status =
        sp == std::string_view::npos ? 0 : std::atol(std::string(line.substr(sp + 1, 3)).c_str());
    return n;
  }
  const size_t colon = line.find(':');
  if (colon != std::string_view::npos && t->response.headers.size() < 256) {
    t->response.headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  }
  return n;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  const bool success = t->status >= 200 && t->status < 300;
  if (success && !t->body_started) {
    t->body_started = true;
    if (t->request->on_start) {
      t->response.status = t->status;
      Status s = t->request->on_start(t->response, t->status);
      if (!s.is_ok()) {
        t->failure = std::move(s);
        return 0;
      }
    }
  }
  if (success && t->request->sink) {
    Status s = t->request->sink({reinterpret_cast<const uint8_t*>(data), n});
    if (!s.is_ok()) {
      t->failure = std::move(s);
      return 0;  // aborts with CURLE_WRITE_ERROR
    }
    return n;
  }
  // Error bodies are kept small whatever max_body says: only the message matters.
  const size_t limit = success ? t->request->max_body : 64u << 10;
  if (t->response.body.size() + n > limit) {
    if (!success) return n;  // drop the rest of an error body
    t->failure = Status(ErrorCode::kResourceLimit,
                        "response body larger than " + std::to_string(limit) + " bytes");
    return 0;
  }
  t->response.body.append(data, n);
  return n;
}

size_t on_read(char* buffer, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const HttpRequest& r = *t->request;
  const uint64_t total = r.body ? r.body->size() : r.upload_length;
  const size_t want = static_cast<size_t>(std::min<uint64_t>(size * count, total - t->upload_pos));
  if (want == 0) return 0;
  if (r.body) {
    std::memcpy(buffer, r.body->data() + t->upload_pos, want);
    t->upload_pos += want;
    return want;
  }
  const ssize_t got =
      ::pread(r.upload_fd, buffer, want, static_cast<off_t>(r.upload_offset + t->upload_pos));
  if (got <= 0) {
    t->failure = Status(ErrorCode::kIo, got == 0 ? "file shrank while uploading"
                                                 : std::string("read: ") + std::strerror(errno));
    return CURL_READFUNC_ABORT;
  }
  t->upload_pos += static_cast<uint64_t>(got);
  return static_cast<size_t>(got);
}

int on_progress(void* user, curl_off_t, curl_off_t dlnow, curl_off_t, curl_off_t ulnow) {
  auto* t = static_cast<Transfer*>(user);
  if (t->session->cancelled()) {
    t->failure = Status(ErrorCode::kInterrupted, "interrupted");
    return 1;
  }
  if (t->request->on_bytes) t->request->on_bytes(static_cast<uint64_t>(std::max(dlnow, ulnow)));
  return 0;
}

bool is_loopback_host(std::string_view host) {
  return host == "127.0.0.1" || host == "localhost" || host == "[::1]";
}

std::once_flag g_curl_init;

// The seconds and the variable that set them, for a request of `kind`.
std::pair<double, const char*> timeout_for(const HubConfig& config, TimeoutKind kind) {
  switch (kind) {
    case TimeoutKind::kMetadata:
      return {config.etag_timeout_seconds, "HF_HUB_ETAG_TIMEOUT"};
    case TimeoutKind::kTransfer:
      return {config.download_timeout_seconds, "HF_HUB_DOWNLOAD_TIMEOUT"};
    case TimeoutKind::kCommit:
      return {std::max(config.download_timeout_seconds, kMinCommitAnswerSeconds),
              "HF_HUB_DOWNLOAD_TIMEOUT"};
  }
  return {config.etag_timeout_seconds, "HF_HUB_ETAG_TIMEOUT"};
}

// What went wrong in words a user acts on; curl's own text for the rest.
std::string transport_failure(CURLcode rc, long os_errno, bool received, double timeout,
                              const char* variable) {
  const std::string limit = seconds_text(timeout) + " (" + variable + ")";
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return "host name lookup failed";
    case CURLE_COULDNT_CONNECT:
      return os_errno == ECONNREFUSED ? "connection refused" : "could not connect";
    case CURLE_OPERATION_TIMEDOUT:
      return received ? "the transfer stalled: nothing received for " + limit
                      : "no answer for " + limit;
    default:
      return curl_easy_strerror(rc);
  }
}

}  // namespace

std::string seconds_text(double seconds) {
  char buffer[32];
  if (seconds == static_cast<double>(static_cast<int64_t>(seconds))) {
    std::snprintf(buffer, sizeof buffer, "%lld s", static_cast<long long>(seconds));
  } else {
    std::snprintf(buffer, sizeof buffer, "%.1f s", seconds);
  }
  return buffer;
}

std::string url_origin(std::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return {};
  const std::string scheme = lower(url.substr(0, scheme_end));
  if (scheme != "http" && scheme != "https") return {};
  const size_t host_begin = scheme_end + 3;
  const size_t host_end = url.find_first_of("/?#", host_begin);
  std::string authority(url.substr(host_begin, host_end == std::string_view::npos
                                                   ? std::string_view::npos
                                                   : host_end - host_begin));
  // Userinfo in a server-sent URL could disguise the host: refuse it (empty origin).
  if (authority.empty() || authority.find('@') != std::string::npos) return {};
  return scheme + "://" + lower(authority);
}

Status check_url_allowed(std::string_view url) {
  const std::string origin = url_origin(url);
  if (origin.empty()) {
    return Status(ErrorCode::kInvalidArgument, "not an http(s) URL: '" + std::string(url) + "'");
  }
  if (origin.rfind("https://", 0) == 0) return Status::ok();
  std::string host = origin.substr(7);
  if (!host.empty() && host[0] == '[') {
    host = host.substr(0, host.find(']') + 1);
  } else {
    host = host.substr(0, host.find(':'));
  }
  if (is_loopback_host(host)) return Status::ok();
  return Status(ErrorCode::kInvalidArgument,
                "plain http:// is allowed for loopback hosts only, not '" + origin + "'");
}

std::string url_escape(std::string_view text, bool keep_slash) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

bool is_retryable_status(long status) {
  return status == 408 || status == 429 || status == 500 || status == 502 || status == 503 ||
         status == 504;
}

double parse_retry_after(std::string_view value) {
  const std::string v = trim(value);
  if (v.empty() || v.size() > 9) return -1;
  for (char c : v) {
    if (c < '0' || c > '9') return -1;
  }
  return std::atof(v.c_str());
}

Status http_error(const HttpResponse& response, const std::string& what) {
  std::string message = response.header("x-error-message");
  if (message.empty()) message = "HTTP " + std::to_string(response.status);
  // Server text goes into our messages: strip control characters (terminal escapes) and cap it.
  std::string clean;
  for (char c : message) {
    if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) clean += c;
    if (clean.size() >= 300) break;
  }
  const std::string code = response.header("x-error-code");
  std::string text = what + ": " + clean + " (HTTP " + std::to_string(response.status);
  if (!code.empty() && code.size() < 40) text += ", " + code;
  text += ")";
  if (code == "RepoNotFound" || code == "RevisionNotFound" || code == "EntryNotFound" ||
      response.status == 404) {
    return Status(ErrorCode::kNotFound, text);
  }
  if (code == "GatedRepo" || response.status == 401 || response.status == 403) {
    return Status(ErrorCode::kInvalidArgument,
                  text + ": check the token (HF_TOKEN or HF_HOME/token) and its access");
  }
  if (response.status >= 400 && response.status < 500) {
    return Status(ErrorCode::kInvalidArgument, text);
  }
  return Status(ErrorCode::kIo, text);
}

HttpSession::HttpSession(const HubConfig& config, const TransferControl& control,
                         const std::atomic<bool>* abort)
    : config_(config),
      control_(control),
      abort_(abort),
      endpoint_origin_(url_origin(config.endpoint)) {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  curl_ = curl_easy_init();
}

HttpSession::~HttpSession() {
  if (curl_) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

bool HttpSession::cancelled() const {
  return (control_.cancelled && control_.cancelled()) ||
         (abort_ && abort_->load(std::memory_order_relaxed));
}

Status HttpSession::backoff_sleep(double seconds) const {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  while (std::chrono::steady_clock::now() < until) {
    if (cancelled()) return Status(ErrorCode::kInterrupted, "interrupted");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Status::ok();
}

Result<HttpResponse> HttpSession::perform(const HttpRequest& request) {
  CURL* curl = static_cast<CURL*>(curl_);
  last_received_ = false;
  if (config_.offline) {
    return Status(ErrorCode::kIo, "HF_HUB_OFFLINE is set: no request to " +
                                      url_origin(request.url) + " (unset it to use the network)");
  }
  if (!curl) return Status(ErrorCode::kResourceLimit, "curl_easy_init failed");
  DF11_RETURN_IF_ERROR(check_url_allowed(request.url));
  if (cancelled()) return Status(ErrorCode::kInterrupted, "interrupted");
  const auto [timeout, timeout_variable] = timeout_for(config_, request.timeout);

  // curl_easy_reset keeps the connection cache: the next request reuses the connection.
  curl_easy_reset(curl);
  Transfer t;
  t.request = &request;
  t.session = this;

  curl_slist* headers = nullptr;
  for (const std::string& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  // Expect: 100-continue would cost a round trip per upload.
  headers = curl_slist_append(headers, "Expect:");
  std::string auth;
  // The token goes to the endpoint's origin only: never to a CDN or a redirect target.
  if (request.auth && config_.token && url_origin(request.url) == endpoint_origin_) {
    auth = "authorization: Bearer " + *config_.token;
    headers = curl_slist_append(headers, auth.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "df11-hub/0.1");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);  // redirects are followed by hand
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout * 1000));
  // A silent connection (under 1 byte/s for the timeout, before the answer or during the
  // body) fails and is retried. curl counts whole seconds here.
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, std::max(1L, std::lround(timeout)));
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 512L * 1024);
  curl_easy_setopt(curl, CURLOPT_UPLOAD_BUFFERSIZE, 512L * 1024);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &t);
  if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (request.method == "POST" || request.method == "DELETE") {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    // DELETE /api/repos/delete carries a JSON body, as a POST does.
    if (request.method == "DELETE") curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "DELETE");
    // curl reads the body during curl_easy_perform: it must be the caller's string itself.
    static const char kEmpty[] = "";
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body ? request.body->data() : kEmpty);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body ? request.body->size() : 0));
  } else if (request.method == "PUT") {
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(curl, CURLOPT_READDATA, &t);
    const uint64_t length = request.body ? request.body->size() : request.upload_length;
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(length));
  } else if (request.method != "GET") {
    curl_slist_free_all(headers);
    return Status(ErrorCode::kInvalidArgument, "unsupported HTTP method " + request.method);
  }

  const CURLcode rc = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  // The header list held the token: overwrite our copy before it is freed.
  std::fill(auth.begin(), auth.end(), '\0');
  last_received_ = t.received;
  if (!t.failure.is_ok()) return t.failure;
  if (rc != CURLE_OK) {
    long os_errno = 0;
    curl_easy_getinfo(curl, CURLINFO_OS_ERRNO, &os_errno);
    // Never the request headers (the token): the failure, in words.
    return Status(ErrorCode::kIo, "network: " + transport_failure(rc, os_errno, t.received, timeout,
                                                                  timeout_variable));
  }
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  t.response.status = status;
  return std::move(t.response);
}

Result<HttpResponse> HttpSession::send(const HttpRequest& request, const std::string& what) {
  const int attempts = std::max(1, control_.max_attempts);
  bool ever_received = false;
  for (int attempt = 1;; ++attempt) {
    if (attempt > 1 && request.on_retry) request.on_retry();
    Result<HttpResponse> r = perform(request);
    ever_received = ever_received || last_received_;
    double wait = std::min(30.0, control_.backoff_base_seconds * std::pow(2.0, attempt - 1));
    // A server that never said anything gets fewer tries than one that did.
    const int allowed = ever_received ? attempts : std::min(attempts, kMaxUnansweredAttempts);
    std::string why;
    if (!r.is_ok()) {
      const ErrorCode code = r.status().code();
      // Only transport failures are worth another try; a sink's own error is final.
      const bool transient =
          code == ErrorCode::kIo && r.status().message().rfind("network: ", 0) == 0;
      if (!transient || attempt >= allowed) return r.status().with_context(what);
      why = r.status().message();
    } else if (is_retryable_status(r->status) && attempt < attempts) {
      const double retry_after = parse_retry_after(r->header("retry-after"));
      if (retry_after >= 0) wait = std::max(wait, std::min(retry_after, 60.0));
      why = "HTTP " + std::to_string(r->status);
    } else if (r->status >= 400) {
      return http_error(*r, what);
    } else {
      return r;
    }
    if (control_.on_retry) {
      control_.on_retry(what + ": " + why + ": retrying in " + seconds_text(wait) + " (attempt " +
                        std::to_string(attempt + 1) + " of " +
                        std::to_string(!r.is_ok() ? allowed : attempts) + ")");
    }
    DF11_RETURN_IF_ERROR(backoff_sleep(wait));
  }
}

}  // namespace df11::hub
