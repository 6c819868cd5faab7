// Unit tests of df11_hub's checks on untrusted input: repo ids, repo paths, URLs, ETags,
// Retry-After, server JSON, HTTP error mapping. (Transfers are tested end to end by
// hub_cli_test.py against the local Hub server.)
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

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
