#include "df11/model_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>
#include <vector>

#include "df11/file_io.h"

namespace df11::app {
namespace fs = std::filesystem;

namespace {

Status io_error(const fs::path& path, const std::string& what, int err) {
  return Status(ErrorCode::kIo, path.string() + ": " + what + ": " + std::strerror(err));
}

// Closes a file descriptor on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

bool is_shard_name(const std::string& name) {
  return name.size() > 12 && name.ends_with(".safetensors");
}

Result<std::vector<std::string>> checkpoint_shards(const std::vector<std::string>& top_level_files,
                                                   const std::optional<std::string>& index_text,
                                                   const std::string& index_where) {
  std::vector<std::string> shards;
  for (const std::string& name : top_level_files) {
    if (is_shard_name(name)) shards.push_back(name);
  }
  std::sort(shards.begin(), shards.end());
  if (!index_text) return shards;
  std::set<std::string> indexed;
  try {
    const auto index = nlohmann::json::parse(*index_text);
    const auto map = index.find("weight_map");
    if (!index.is_object() || map == index.end() || !map->is_object()) {
      return Status(ErrorCode::kBadConfig, index_where + ": no weight_map object");
    }
    for (const auto& [tensor, file] : map->items()) {
      if (!file.is_string()) {
        return Status(ErrorCode::kBadConfig,
                      index_where + ": weight_map['" + tensor + "'] is not a file name");
      }
      indexed.insert(file.get<std::string>());
    }
  } catch (const nlohmann::json::exception& e) {
    return Status(ErrorCode::kBadConfig, index_where + ": " + e.what());
  }
  const std::set<std::string> present(top_level_files.begin(), top_level_files.end());
  for (const std::string& file : indexed) {
    if (file.find('/') != std::string::npos || present.count(file) == 0) {
      return Status(ErrorCode::kNotFound, index_where + ": names shard '" + file +
                                              "', which is not a file of the folder");
    }
  }
  // With an index, the checkpoint is the shards it names; another top-level .safetensors
  // (e.g. a consolidated.safetensors beside HF shards) is just a file to copy.
  std::erase_if(shards, [&](const std::string& name) { return indexed.count(name) == 0; });
  return shards;
}

std::vector<TensorLocation> ModelFolder::tensors_in_file_order() const {
  std::vector<TensorLocation> order;
  for (size_t s = 0; s < shards.size(); ++s) {
    // The format keeps each header's tensors sorted by data offset.
    for (size_t t = 0; t < shards[s].header().tensors.size(); ++t) order.push_back({s, t});
  }
  return order;
}

Result<ModelFolder> open_single_file_model(const fs::path& file) {
  ModelFolder folder;
  folder.dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  folder.shard_names.push_back(file.filename().string());
  auto opened = SafetensorsFile::open(file.string());
  if (!opened) {
    std::error_code ec;
    if (!file.string().ends_with(".safetensors") && fs::is_regular_file(file, ec)) {
      return Status(ErrorCode::kInvalidArgument,
                    file.string() +
                        ": not a safetensors file (expected a model folder or a .safetensors "
                        "file)");
    }
    return opened.status();
  }
  folder.shards.push_back(std::move(opened).value());
  const auto& tensors = folder.shards.back().header().tensors;
  for (size_t t = 0; t < tensors.size(); ++t) {
    folder.tensors.emplace(tensors[t].name, TensorLocation{0, t});
  }
  return folder;
}

Result<ModelFolder> open_model_path(const fs::path& path, const CancelToken& cancel) {
  std::error_code ec;
  if (fs::is_directory(path, ec) || !fs::exists(path, ec)) return open_model_folder(path, cancel);
  return open_single_file_model(path);
}

Result<ModelFolder> open_model_folder(const fs::path& dir, const CancelToken& cancel) {
  ModelFolder folder;
  folder.dir = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Status(ErrorCode::kNotFound, dir.string() + ": not a folder");
  }
  // The index: Hugging Face's name, else diffusers' (a pipeline component's).
  for (const char* name : {kIndexFile, kDiffusersIndexFile}) {
    if (fs::exists(dir / name, ec)) {
      folder.index_name = name;
      break;
    }
  }
  // Top level: shards, config.json, the index. Everything else, at any depth, is a side file.
  std::vector<std::string> top_level;
  fs::recursive_directory_iterator it(dir, fs::directory_options::follow_directory_symlink, ec);
  if (ec) return Status(ErrorCode::kIo, dir.string() + ": cannot list: " + ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return Status(ErrorCode::kIo, dir.string() + ": cannot list: " + ec.message());
    DF11_RETURN_IF_ERROR(cancel.check());
    const fs::path& path = it->path();
    std::error_code type_ec;
    if (fs::is_directory(path, type_ec)) continue;
    if (!fs::is_regular_file(path, type_ec)) {
      return Status(ErrorCode::kIo, path.string() +
                                        ": not a regular file (broken link, socket, "
                                        "device...): cannot be copied");
    }
    const std::string rel = path.lexically_relative(dir).generic_string();
    if (it.depth() == 0) {
      top_level.push_back(rel);
      if (is_shard_name(rel) || rel == kConfigFile || rel == folder.index_name) continue;
    }
    folder.side_files.push_back(rel);
  }
  for (const std::string& name : {std::string(kConfigFile), folder.index_name}) {
    const fs::path path = dir / name;
    if (!fs::exists(path, ec)) continue;
    auto text =
        read_file_to_string(path.string(), name == kConfigFile ? kMaxConfigBytes : kMaxIndexBytes);
    if (!text) return text.status();
    (name == kConfigFile ? folder.config_text : folder.index_text) = std::move(text).value();
  }
  DF11_ASSIGN_OR_RETURN(folder.shard_names, checkpoint_shards(top_level, folder.index_text,
                                                              (dir / folder.index_name).string()));
  for (const std::string& name : top_level) {
    if (is_shard_name(name) &&
        !std::binary_search(folder.shard_names.begin(), folder.shard_names.end(), name)) {
      folder.side_files.push_back(name);
    }
  }
  std::sort(folder.side_files.begin(), folder.side_files.end());
  if (folder.shard_names.empty()) {
    return Status(ErrorCode::kNotFound, dir.string() + ": no *.safetensors file in this folder");
  }

  folder.shards.reserve(folder.shard_names.size());
  for (size_t s = 0; s < folder.shard_names.size(); ++s) {
    DF11_RETURN_IF_ERROR(cancel.check());
    auto file = SafetensorsFile::open(folder.shard_path(s));
    if (!file) return file.status();
    folder.shards.push_back(std::move(file).value());
    const auto& tensors = folder.shards.back().header().tensors;
    for (size_t t = 0; t < tensors.size(); ++t) {
      auto [pos, inserted] = folder.tensors.emplace(tensors[t].name, TensorLocation{s, t});
      if (!inserted) {
        return Status(ErrorCode::kDuplicateName,
                      folder.shard_path(s) + ": tensor '" + tensors[t].name + "' also appears in " +
                          folder.shard_names[pos->second.shard] +
                          " (tensor names must be unique across the model)");
      }
    }
  }
  return folder;
}

Status copy_one_file(const fs::path& from, const fs::path& to,
                     const std::function<void(uint64_t)>& on_bytes, const CancelToken& cancel) {
  Fd in{::open(from.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0) return io_error(from, "cannot open", errno);
  struct stat st;
  if (::fstat(in.fd, &st) != 0) return io_error(from, "cannot stat", errno);
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  if (ec) return Status(ErrorCode::kIo, to.parent_path().string() + ": " + ec.message());
  Fd out{::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 07777)};
  if (out.fd < 0) return io_error(to, "cannot create", errno);

  // copy_file_range keeps the data in the kernel (and reflinks where the filesystem can);
  // bounded steps let an interrupt stop a multi-gigabyte copy quickly.
  constexpr size_t kStep = 64u << 20;
  bool use_read_write = false;
  std::vector<char> buffer;
  for (;;) {
    DF11_RETURN_IF_ERROR(cancel.check());
    ssize_t n;
    if (!use_read_write) {
      n = ::copy_file_range(in.fd, nullptr, out.fd, nullptr, kStep, 0);
      if (n < 0 && (errno == ENOSYS || errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP)) {
        use_read_write = true;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return io_error(to, "cannot copy from " + from.string(), errno);
    } else {
      if (buffer.empty()) buffer.resize(1u << 20);
      n = ::read(in.fd, buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return io_error(from, "cannot read", errno);
      for (ssize_t done = 0; done < n;) {
        const ssize_t w = ::write(out.fd, buffer.data() + done, static_cast<size_t>(n - done));
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return io_error(to, "cannot write", errno);
        done += w;
      }
    }
    if (n == 0) break;
    if (on_bytes) on_bytes(static_cast<uint64_t>(n));
  }
  if (::close(out.fd) != 0) {
    out.fd = -1;
    return io_error(to, "cannot close", errno);
  }
  out.fd = -1;
  return Status::ok();
}

Status copy_side_files(const fs::path& from, const fs::path& to,
                       const std::vector<std::string>& files,
                       const std::function<void(uint64_t)>& on_bytes, const CancelToken& cancel) {
  for (const std::string& rel : files) {
    DF11_RETURN_IF_ERROR(copy_one_file(from / rel, to / rel, on_bytes, cancel));
  }
  return Status::ok();
}

}  // namespace df11::app
