// Unit tests of df11_hub's checks on untrusted input: repo ids, repo paths, URLs, ETags,
// Retry-After, server JSON, HTTP error mapping; its timeouts and retries against a refused
// port and a server that accepts and never answers (both on 127.0.0.1); HF_HUB_OFFLINE.
// (Transfers are tested end to end by hub_cli_test.py against the local Hub server.)
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "df11/hub/hub.h"
#include "git_blob.h"
#include "http_client.h"
#include "hub_api.h"

namespace df11::hub {
namespace {

TEST(HubRepoRef, ParsesIdAndRevision) {
  auto ref = parse_repo_ref("Qwen/Qwen3-8B");
  ASSERT_TRUE(ref.is_ok());
  EXPECT_EQ(ref->repo_id, "Qwen/Qwen3-8B");
  EXPECT_EQ(ref->revision, "main");
  ref = parse_repo_ref("org/name@refs/pr/3");
  ASSERT_TRUE(ref.is_ok());
  EXPECT_EQ(ref->revision, "refs/pr/3");
}

TEST(HubRepoRef, RejectsWhatIsNotARepoId) {
  for (const char* bad :
       {"", "name", "/abs/path", "a/b/c", "org/..", "../x", "org/na me", "org/-x", "org/x.",
        "org/a--b", "org/x@", "org/x@../main", "./org/x", "org/x@a b"}) {
    auto ref = parse_repo_ref(bad);
    EXPECT_FALSE(ref.is_ok()) << bad;
    if (!ref.is_ok()) {
      EXPECT_EQ(ref.status().code(), ErrorCode::kInvalidArgument) << bad;
    }
  }
  EXPECT_FALSE(looks_like_repo_ref("./org/x"));
  EXPECT_TRUE(looks_like_repo_ref("org/x@v1.0"));
}

TEST(HubRepoPath, RefusesNamesThatEscapeTheFolder) {
  EXPECT_TRUE(is_safe_repo_path("config.json"));
  EXPECT_TRUE(is_safe_repo_path("sub/dir/model.safetensors"));
  for (const char* bad : {"", "/etc/passwd", "../x", "a/../../x", "a/./b", "a//b", "a/", "..",
                          "a\\..\\b", "a\nb", "x\x1b[31m"}) {
    EXPECT_FALSE(is_safe_repo_path(bad)) << bad;
  }
  EXPECT_FALSE(is_safe_repo_path(std::string("a\0b", 3)));
  EXPECT_FALSE(is_safe_repo_path(std::string(1025, 'a')));
  EXPECT_EQ(repo_folder_name("org/name"), "models--org--name");
}

TEST(HubUrl, HttpOnlyForLoopback) {
  EXPECT_TRUE(check_url_allowed("https://huggingface.co").is_ok());
  EXPECT_TRUE(check_url_allowed("http://127.0.0.1:8080/x").is_ok());
  EXPECT_TRUE(check_url_allowed("http://localhost:9/x").is_ok());
  EXPECT_TRUE(check_url_allowed("http://[::1]:9/x").is_ok());
  for (const char* bad : {"http://example.com", "http://127.0.0.1.evil.com/", "ftp://x/y",
                          "file:///etc/passwd", "https://user:pw@host/", "/relative", "http://"}) {
    EXPECT_EQ(check_url_allowed(bad).code(), ErrorCode::kInvalidArgument) << bad;
  }
  // The token goes where the origin matches exactly (scheme, host and port).
  EXPECT_EQ(url_origin("https://HuggingFace.co/api/x?y"), "https://huggingface.co");
  EXPECT_NE(url_origin("http://127.0.0.1:1/x"), url_origin("http://localhost:1/x"));
  EXPECT_NE(url_origin("http://127.0.0.1:1/x"), url_origin("http://127.0.0.1:2/x"));
  EXPECT_EQ(url_escape("a b/c%", true), "a%20b/c%25");
  EXPECT_EQ(url_escape("refs/pr/1", false), "refs%2Fpr%2F1");
}

TEST(HubHeaders, EtagAndRetryAfter) {
  EXPECT_EQ(normalize_etag("W/\"abc\""), "abc");
  EXPECT_EQ(normalize_etag("\"abc\""), "abc");
  EXPECT_EQ(normalize_etag("abc"), "abc");
  EXPECT_EQ(parse_retry_after("3"), 3.0);
  EXPECT_EQ(parse_retry_after(" 12 "), 12.0);
  EXPECT_LT(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), 0);
  EXPECT_LT(parse_retry_after("-1"), 0);
  EXPECT_LT(parse_retry_after("99999999999"), 0);
  for (long s : {408L, 429L, 500L, 502L, 503L, 504L}) EXPECT_TRUE(is_retryable_status(s));
  for (long s : {200L, 400L, 401L, 403L, 404L, 409L, 501L}) EXPECT_FALSE(is_retryable_status(s));
}

TEST(HubErrors, XErrorCodeMapsToStatusAndIsSanitised) {
  HttpResponse r;
  r.status = 404;
  r.headers["x-error-code"] = "RepoNotFound";
  r.headers["x-error-message"] = "Repository not found\x1b[2J";
  Status s = http_error(r, "list org/x");
  EXPECT_EQ(s.code(), ErrorCode::kNotFound);
  EXPECT_NE(s.message().find("RepoNotFound"), std::string::npos);
  EXPECT_EQ(s.message().find('\x1b'), std::string::npos);
  r.headers["x-error-code"] = "GatedRepo";
  r.status = 403;
  EXPECT_EQ(http_error(r, "x").code(), ErrorCode::kInvalidArgument);
  r.headers.clear();
  r.status = 503;
  EXPECT_EQ(http_error(r, "x").code(), ErrorCode::kIo);
}

TEST(HubJson, ParsedWithLimits) {
  EXPECT_TRUE(parse_server_json("{\"a\":[1,2]}", "t").is_ok());
  EXPECT_EQ(parse_server_json("{\"a\":", "t").status().code(), ErrorCode::kBadJson);
  std::string deep(100, '[');
  deep += std::string(100, ']');
  EXPECT_EQ(parse_server_json(deep, "t").status().code(), ErrorCode::kBadJson);
  EXPECT_EQ(parse_server_json(std::string(100, ' '), "t", 10).status().code(),
            ErrorCode::kResourceLimit);
}

// Ranges are checked against the listing's sizes before any request is made (nothing
// listens on the endpoint: a request would fail with kIo, not kInvalidArgument).
TEST(HubRanges, CheckedAgainstTheListingBeforeAnyRequest) {
  HubConfig config;
  config.endpoint = "http://127.0.0.1:9";
  RemoteListing listing;
  listing.commit = std::string(40, 'a');
  listing.files.push_back(RemoteFile{"model.safetensors", 100, std::string(64, 'b'), true});
  TransferControl control;
  control.max_attempts = 1;
  RangeStats stats;
  const auto code = [&](ByteRange r) {
    return read_ranges(config, "org/x", listing, {r}, control, &stats).status().code();
  };
  EXPECT_EQ(code({"other.safetensors", 0, 8}), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code({"model.safetensors", 0, 0}), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code({"model.safetensors", 96, 8}), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code({"model.safetensors", 101, 1}), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code({"model.safetensors", UINT64_MAX, 2}), ErrorCode::kInvalidArgument);
  EXPECT_EQ(stats.requests, 0u);
  // A valid range does reach the network (and fails there).
  EXPECT_EQ(code({"model.safetensors", 92, 8}), ErrorCode::kIo);
  EXPECT_EQ(stats.requests, 1u);
  EXPECT_EQ(stats.bytes_received, 0u);
}

// push compares a small file with the Hub's blobId (git's object id) and deletes the remote
// weight files the folder lacks.
TEST(HubPush, GitBlobIdsAndWeightFiles) {
  EXPECT_EQ(git_blob_id(""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");  // git's empty blob
  EXPECT_EQ(git_blob_id("hello\n"), "ce013625030ba8dba906f756967f9e9ca394464a");
  for (const char* w : {"model.safetensors", "model-00001-of-00002.safetensors",
                        "model.safetensors.index.json", "transformer/x.safetensors",
                        "transformer/diffusion_pytorch_model.safetensors.index.json"}) {
    EXPECT_TRUE(is_weight_file(w)) << w;
  }
  for (const char* o : {"README.md", "config.json", "tokenizer.json", "safetensors",
                        "model.safetensors.bak", ".gitattributes"}) {
    EXPECT_FALSE(is_weight_file(o)) << o;
  }
}

// A port on 127.0.0.1 where nothing listens: bound, then closed.
int refused_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// Accepts every connection on 127.0.0.1 and never answers (until destroyed).
class SilentServer {
 public:
  SilentServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        std::lock_guard<std::mutex> lock(mutex_);
        accepted_.push_back(c);
      }
    });
  }
  ~SilentServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
    for (int c : accepted_) ::close(c);
  }
  int port() const { return port_; }
  size_t accepted() {
    std::lock_guard<std::mutex> lock(mutex_);
    return accepted_.size();
  }

 private:
  int fd_ = -1, port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<int> accepted_;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// list_repo of org/x@main at `config`'s endpoint: how it failed, how long it took, and the
// retry notices it gave.
struct TimedFailure {
  Status status;
  double seconds = 0;
  std::vector<std::string> retries;
};
TimedFailure timed_list(const HubConfig& config, TransferControl control) {
  TimedFailure out;
  std::mutex mutex;
  control.on_retry = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex);
    out.retries.push_back(line);
  };
  const auto start = std::chrono::steady_clock::now();
  auto r = list_repo(config, RepoRef{"org/x", "main"}, control);
  out.seconds = seconds_since(start);
  EXPECT_FALSE(r.is_ok());
  out.status = r.status();
  EXPECT_EQ(out.status.code(), ErrorCode::kIo);
  return out;
}

// A refused connection fails after a few quick, announced retries (was: 6 attempts in
// 15.6 s, silently).
TEST(HubTimeouts, RefusedConnectionFailsFastAndSaysItRetries) {
  HubConfig config;
  config.endpoint = "http://127.0.0.1:" + std::to_string(refused_port());
  const TimedFailure f = timed_list(config, {});
  EXPECT_NE(f.status.message().find("connection refused"), std::string::npos) << f.status.message();
  // Counted, not timed: three attempts (two announced retries) whatever the machine's load.
  ASSERT_EQ(f.retries.size(), 2u);
  EXPECT_NE(f.retries[0].find("list org/x@main: network: connection refused: retrying in 0.5 s "
                              "(attempt 2 of 3)"),
            std::string::npos)
      << f.retries[0];
  EXPECT_NE(f.retries[1].find("retrying in 1 s (attempt 3 of 3)"), std::string::npos)
      << f.retries[1];
}

// A server that accepts and never answers: each attempt ends after the metadata timeout
// (HF_HUB_ETAG_TIMEOUT), and the message says which variable sets it (was: 376 s).
TEST(HubTimeouts, SilentServerTimesOutAfterTheEtagTimeout) {
  SilentServer server;
  HubConfig config;
  config.endpoint = "http://127.0.0.1:" + std::to_string(server.port());
  config.etag_timeout_seconds = 1;
  TransferControl control;
  control.backoff_base_seconds = 0.05;
  const TimedFailure f = timed_list(config, control);
  EXPECT_NE(f.status.message().find("no answer for 1 s (HF_HUB_ETAG_TIMEOUT)"), std::string::npos)
      << f.status.message();
  EXPECT_EQ(server.accepted(), 3u);
  EXPECT_EQ(f.retries.size(), 2u);
  EXPECT_GE(f.seconds, 2.9);  // a lower bound only: each attempt waited its 1 s
}

// A file transfer that stalls waits HF_HUB_DOWNLOAD_TIMEOUT, not the metadata timeout.
TEST(HubTimeouts, StalledDownloadWaitsTheDownloadTimeout) {
  SilentServer server;
  HubConfig config;
  config.endpoint = "http://127.0.0.1:" + std::to_string(server.port());
  config.etag_timeout_seconds = 30;
  config.download_timeout_seconds = 1;
  RemoteListing listing;
  listing.commit = std::string(40, 'a');
  listing.files.push_back(RemoteFile{"model.safetensors", 100, std::string(64, 'b'), true});
  TransferControl control;
  control.max_attempts = 1;
  auto r = read_ranges(config, "org/x", listing, {{"model.safetensors", 0, 8}}, control, nullptr);
  ASSERT_FALSE(r.is_ok());
  // The message names the limit that ended the wait and its value (1 s, not the 30 s metadata
  // timeout): checked from the message rather than a wall-clock bound a loaded machine misses.
  EXPECT_NE(r.status().message().find("no answer for 1 s (HF_HUB_DOWNLOAD_TIMEOUT)"),
            std::string::npos)
      << r.status().message();
}

// HF_HUB_OFFLINE: no request is made; the message names the variable.
TEST(HubOffline, NoRequestAtAll) {
  SilentServer server;
  HubConfig config;
  config.endpoint = "http://127.0.0.1:" + std::to_string(server.port());
  config.offline = true;
  TransferControl control;
  auto r = list_repo(config, RepoRef{"org/x", "main"}, control);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("HF_HUB_OFFLINE"), std::string::npos) << r.status().message();
  EXPECT_EQ(server.accepted(), 0u);
}

TEST(HubConfig, TimeoutAndOfflineVariables) {
  ::unsetenv("HF_ENDPOINT");
  ::unsetenv("HF_HUB_OFFLINE");
  ::unsetenv("HF_HUB_ETAG_TIMEOUT");
  ::unsetenv("HF_HUB_DOWNLOAD_TIMEOUT");
  auto c = config_from_environment();
  ASSERT_TRUE(c.is_ok());
  EXPECT_FALSE(c->offline);
  EXPECT_EQ(c->etag_timeout_seconds, 10.0);  // huggingface_hub's defaults
  EXPECT_EQ(c->download_timeout_seconds, 10.0);
  for (const char* on : {"1", "ON", "yes", "True"}) {
    ::setenv("HF_HUB_OFFLINE", on, 1);
    EXPECT_TRUE(config_from_environment()->offline) << on;
  }
  for (const char* off : {"0", "", "false", "no"}) {
    ::setenv("HF_HUB_OFFLINE", off, 1);
    EXPECT_FALSE(config_from_environment()->offline) << off;
  }
  ::unsetenv("HF_HUB_OFFLINE");
  ::setenv("HF_HUB_ETAG_TIMEOUT", "2.5", 1);
  ::setenv("HF_HUB_DOWNLOAD_TIMEOUT", "60", 1);
  c = config_from_environment();
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->etag_timeout_seconds, 2.5);
  EXPECT_EQ(c->download_timeout_seconds, 60.0);
  for (const char* bad : {"0", "-1", "ten", "1e9", "nan"}) {
    ::setenv("HF_HUB_DOWNLOAD_TIMEOUT", bad, 1);
    auto b = config_from_environment();
    ASSERT_FALSE(b.is_ok()) << bad;
    EXPECT_EQ(b.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(b.status().message().find("HF_HUB_DOWNLOAD_TIMEOUT"), std::string::npos);
  }
  ::unsetenv("HF_HUB_ETAG_TIMEOUT");
  ::unsetenv("HF_HUB_DOWNLOAD_TIMEOUT");
}

TEST(HubConfig, EnvironmentAndTokenFile) {
  ::setenv("HF_ENDPOINT", "http://127.0.0.1:1/", 1);
  ::setenv("HF_TOKEN", "  hf_abc \n", 1);
  ::setenv("HF_HOME", "/nonexistent-df11-home", 1);
  ::unsetenv("HF_HUB_CACHE");
  auto c = config_from_environment();
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->endpoint, "http://127.0.0.1:1");
  EXPECT_EQ(*c->token, "hf_abc");
  EXPECT_EQ(c->cache_dir, "/nonexistent-df11-home/hub");
  ::setenv("HF_HUB_CACHE", "/x/cache", 1);
  EXPECT_EQ(config_from_environment()->cache_dir, "/x/cache");
  ::setenv("HF_TOKEN", "a\nb: c", 1);
  EXPECT_EQ(config_from_environment().status().code(), ErrorCode::kInvalidArgument);
  ::setenv("HF_TOKEN", "x", 1);
  ::setenv("HF_ENDPOINT", "http://example.com", 1);
  auto bad = config_from_environment();
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  // The message names the endpoint, never the token.
  EXPECT_EQ(bad.status().message().find("hf_abc"), std::string::npos);
  ::unsetenv("HF_ENDPOINT");
  ::unsetenv("HF_TOKEN");
  ::unsetenv("HF_HOME");
  ::unsetenv("HF_HUB_CACHE");
}

}  // namespace
}  // namespace df11::hub
