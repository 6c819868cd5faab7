// The tools C API's Hub handle (df11_tools.h): df11_hub_pull is `df11 pull` (pull_model,
// pipeline/include/df11/hub_pipeline.h) with the caller's progress callback. No exception crosses
// into C.
#include <new>
#include <string>

#include "callback_reporter.h"
#include "df11/df11_tools.h"
#include "df11/hub_pipeline.h"
#include "error_state.h"

using df11::ErrorCode;
using df11::Status;

struct df11_hub {
  df11::capi::ErrorState err;
  int transfers = 8;
  df11_progress_fn progress = nullptr;
  void* progress_user = nullptr;
  std::string snapshot_dir;
};

using df11::capi::guarded;

extern "C" {

df11_status df11_hub_create(df11_hub** out) {
  if (out == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  *out = new (std::nothrow) df11_hub();
  return *out == nullptr ? DF11_ERROR_RESOURCE_LIMIT : DF11_OK;
}

void df11_hub_free(df11_hub* hub) { delete hub; }

const char* df11_hub_errmsg(const df11_hub* hub) {
  return hub == nullptr ? "no Hub handle (NULL)" : hub->err.last_message();
}

df11_status df11_hub_errcode(const df11_hub* hub) {
  return hub == nullptr ? DF11_ERROR_INVALID_ARGUMENT : hub->err.last_code();
}

df11_status df11_hub_set_transfers(df11_hub* hub, int transfers) {
  if (hub == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  if (transfers < 1 || transfers > 64) {
    return df11::capi::fail(
        hub->err, Status(ErrorCode::kInvalidArgument,
                         "transfers: " + std::to_string(transfers) + " is out of range (1 to 64)"));
  }
  hub->transfers = transfers;
  return DF11_OK;
}

df11_status df11_hub_set_progress(df11_hub* hub, df11_progress_fn progress, void* user) {
  if (hub == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  hub->progress = progress;
  hub->progress_user = user;
  return DF11_OK;
}

df11_status df11_hub_pull(df11_hub* hub, const char* repo, const char** snapshot_dir) {
  if (hub == nullptr) return DF11_ERROR_INVALID_ARGUMENT;
  return guarded(hub->err, [&] {
    if (repo == nullptr || snapshot_dir == nullptr) {
      return Status(ErrorCode::kInvalidArgument, "pull: repo and snapshot_dir are needed");
    }
    *snapshot_dir = nullptr;
    df11::app::PullModelOptions options;
    options.repo = repo;
    options.transfers = hub->transfers;
    df11::app::CancelToken cancel;
    df11::tools::CallbackReporter reporter(hub->progress, hub->progress_user, cancel);
    DF11_ASSIGN_OR_RETURN(df11::hub::PullResult pulled,
                          df11::app::pull_model(options, reporter, cancel));
    hub->snapshot_dir = std::move(pulled.snapshot_dir);
    *snapshot_dir = hub->snapshot_dir.c_str();
    return Status::ok();
  });
}

}  // extern "C"
