// A C handle's latest failure (sqlite3_errmsg style) and the boundary that records it: shared
// by the decode C API (df11.h) and the tools C API (df11_tools.h, tools_capi/), whose handles
// report errors the same way.
#pragma once

#include <exception>
#include <mutex>
#include <new>
#include <string>

#include "df11/df11.h"
#include "df11/status.h"

namespace df11::capi {

// Locked: CPU decodes may run concurrently on one model handle.
struct ErrorState {
  mutable std::mutex mu;
  ErrorCode code = ErrorCode::kOk;
  std::string message;

  // For df11_*_errmsg / df11_*_errcode: valid until the next failure recorded.
  const char* last_message() const {
    std::lock_guard<std::mutex> lock(mu);
    return message.c_str();
  }
  df11_status last_code() const {
    std::lock_guard<std::mutex> lock(mu);
    return static_cast<df11_status>(code);
  }
};

// Records a failure on the handle and returns its code.
inline df11_status fail(ErrorState& err, const Status& s) {
  std::lock_guard<std::mutex> lock(err.mu);
  err.code = s.code();
  err.message = s.message();
  return static_cast<df11_status>(s.code());
}

// DF11_OK for OK, otherwise fail().
inline df11_status record(ErrorState& err, const Status& s) {
  return s.is_ok() ? DF11_OK : fail(err, s);
}

// Runs `body` (returning Status) at the C boundary: its status, or an exception turned into
// one, recorded on `err`.
template <typename F>
df11_status guarded(ErrorState& err, F&& body) {
  try {
    return record(err, body());
  } catch (const std::bad_alloc&) {
    return fail(err, Status(ErrorCode::kResourceLimit, "out of memory"));
  } catch (const std::exception& e) {
    return fail(err,
                Status(ErrorCode::kInternal, std::string("unexpected exception: ") + e.what()));
  }
}

}  // namespace df11::capi
