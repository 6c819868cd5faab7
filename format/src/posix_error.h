// Private to format/: turning errno into a Status that names the file.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>

#include "df11/status.h"

namespace df11::detail {

// "<path>: <what>: <strerror(err)>"; ENOENT becomes kNotFound, everything else `code`.
inline Status errno_status(ErrorCode code, const std::string& path, const std::string& what,
                           int err) {
  if (err == ENOENT) code = ErrorCode::kNotFound;
  return Status(code, path + ": " + what + ": " + std::strerror(err));
}

}  // namespace df11::detail
