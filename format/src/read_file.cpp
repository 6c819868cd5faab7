#include "df11/file_io.h"
#include "posix_file.h"

namespace df11 {
namespace {

// read_file_to_string reads this much per read() call.
constexpr size_t kReadChunkBytes = 64 << 10;

}  // namespace

Result<std::string> read_file_to_string(const std::string& path, uint64_t max_bytes) {
  DF11_ASSIGN_OR_RETURN(detail::OpenedFile file, detail::open_regular_file(path));
  auto too_large = [&] {
    return Status(ErrorCode::kResourceLimit,
                  path + ": more than the limit of " + std::to_string(max_bytes) + " bytes");
  };
  if (file.size > max_bytes) return too_large();
  std::string out;
  out.reserve(static_cast<size_t>(file.size));
  DF11_RETURN_IF_ERROR(detail::read_all_chunks(
      file.fd.get(), path, kReadChunkBytes, [&](std::span<const uint8_t> chunk) {
        // The file may have grown since fstat.
        if (chunk.size() > max_bytes - out.size()) return too_large();
        out.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
        return Status::ok();
      }));
  return out;
}

}  // namespace df11
