#include "df11/safetensors.h"
#include "json_util.h"

namespace df11 {

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  DF11_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  DF11_ASSIGN_OR_RETURN(SafetensorsHeader header, parse_safetensors(file.span(), path));
  // The header pages are not needed again: the parsed copy holds everything.
  file.advise_dontneed(0, header.data_start);
  return SafetensorsFile(std::move(file), std::move(header));
}

std::span<const uint8_t> SafetensorsFile::tensor_bytes(const TensorInfo& tensor) const {
  return bytes().subspan(static_cast<size_t>(tensor.file_offset),
                         static_cast<size_t>(tensor.byte_size()));
}

Result<std::span<const uint8_t>> SafetensorsFile::tensor_bytes(std::string_view name) const {
  const TensorInfo* t = header_.find(name);
  if (t == nullptr) {
    return Status(ErrorCode::kNotFound,
                  header_.file_name + ": no tensor " + detail::quote_name(name));
  }
  return tensor_bytes(*t);
}

void SafetensorsFile::release(const TensorInfo& tensor) const {
  file_.advise_dontneed(tensor.file_offset, tensor.byte_size());
}

}  // namespace df11
