// Endpoint, token and cache resolution from the environment; repo ids and repo paths.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "df11/hub/hub.h"
#include "http_client.h"

namespace df11::hub {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string strip(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  return s.substr(b);
}

// Hub names: letters, digits, '-', '_', '.'; not starting or ending with '-' or '.', no "--"
// or ".." (the cache folder name joins the parts with "--"), at most 96 characters.
bool valid_name_part(std::string_view s) {
  if (s.empty() || s.size() > 96) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return false;
    }
  }
  if (s.front() == '-' || s.front() == '.' || s.back() == '-' || s.back() == '.') return false;
  return s.find("--") == std::string_view::npos && s.find("..") == std::string_view::npos;
}

bool valid_revision(std::string_view s) {
  if (s.empty() || s.size() > 256) return false;
  if (s.find("..") != std::string_view::npos || s.front() == '/' || s.back() == '/') return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
          c == '/')) {
      return false;
    }
  }
  return true;
}

// "'text'" (built by appends: GCC 12's -Wrestrict misfires on "'" + std::string(...)).
std::string quoted(std::string_view text) {
  std::string out;
  out += '\'';
  out.append(text);
  out += '\'';
  return out;
}

// huggingface_hub's boolean variables: "1", "ON", "YES", "TRUE" (any case) are true.
bool env_true(const char* name) {
  std::string v = strip(env(name));
  for (char& c : v) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return v == "1" || v == "ON" || v == "YES" || v == "TRUE";
}

// Seconds from a timeout variable: a number above 0 and at most a day; unset keeps `value`.
Status env_seconds(const char* name, double& value) {
  const std::string text = strip(env(name));
  if (text.empty()) return Status::ok();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !(v > 0) || v > 86400) {
    return Status(ErrorCode::kInvalidArgument,
                  std::string(name) + "=" + quoted(text) +
                      ": must be a number of seconds above 0 (at most 86400)");
  }
  value = v;
  return Status::ok();
}

}  // namespace

Result<HubConfig> config_from_environment() {
  HubConfig config;
  std::string endpoint = env("HF_ENDPOINT");
  if (!endpoint.empty()) {
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    config.endpoint = endpoint;
  }
  if (Status s = check_url_allowed(config.endpoint); !s.is_ok()) {
    return s.with_context("HF_ENDPOINT");
  }
  std::string home = env("HF_HOME");
  const std::string user_home = env("HOME");
  if (home.empty()) {
    const std::string xdg = env("XDG_CACHE_HOME");
    home = (xdg.empty() ? user_home + "/.cache" : xdg) + "/huggingface";
  }
  std::string token = strip(env("HF_TOKEN"));
  if (token.empty()) {
    std::ifstream in(home + "/token");
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      token = strip(ss.str());
    }
  }
  if (!token.empty()) {
    for (char c : token) {
      // A token with a newline would inject a header line.
      if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f) {
        return Status(ErrorCode::kInvalidArgument,
                      "the Hub token (HF_TOKEN or HF_HOME/token) contains a control character "
                      "or a space");
      }
    }
    config.token = token;
  }
  config.cache_dir = env("HF_HUB_CACHE");
  if (config.cache_dir.empty()) config.cache_dir = home + "/hub";
  config.offline = env_true("HF_HUB_OFFLINE");
  DF11_RETURN_IF_ERROR(env_seconds("HF_HUB_ETAG_TIMEOUT", config.etag_timeout_seconds));
  DF11_RETURN_IF_ERROR(env_seconds("HF_HUB_DOWNLOAD_TIMEOUT", config.download_timeout_seconds));
  return config;
}

Result<RepoRef> parse_repo_ref(std::string_view text) {
  RepoRef ref;
  std::string_view id = text;
  const size_t at = text.find('@');
  if (at != std::string_view::npos) {
    id = text.substr(0, at);
    ref.revision = std::string(text.substr(at + 1));
    if (!valid_revision(ref.revision)) {
      return Status(ErrorCode::kInvalidArgument, quoted(text) + ": not a valid revision after '@'");
    }
  }
  const size_t slash = id.find('/');
  if (slash == std::string_view::npos || !valid_name_part(id.substr(0, slash)) ||
      !valid_name_part(id.substr(slash + 1))) {
    return Status(ErrorCode::kInvalidArgument,
                  quoted(text) + ": not a Hub repo id (expected org/name[@revision])");
  }
  ref.repo_id = std::string(id);
  return ref;
}

bool looks_like_repo_ref(std::string_view text) {
  return parse_repo_ref(text).is_ok() && text.find("./") == std::string_view::npos;
}

bool is_safe_repo_path(std::string_view path) {
  if (path.empty() || path.size() > 1024 || path.front() == '/') return false;
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = path.find('/', begin);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view part = path.substr(begin, end - begin);
    if (part.empty() || part == "." || part == "..") return false;
    begin = end + 1;
  }
  for (char c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '\\') return false;
  }
  return true;
}

std::string repo_folder_name(std::string_view repo_id) {
  std::string out = "models--";
  for (char c : repo_id) {
    if (c == '/') {
      out += "--";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace df11::hub
