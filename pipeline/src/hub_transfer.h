// Hub transfers under a pipeline's Reporter and CancelToken: what pull (hub_pull.cpp) and
// push (hub_pipeline.cpp) share.
#pragma once

#include <mutex>
#include <string>

#include "df11/cancel.h"
#include "df11/hub/hub.h"
#include "df11/reporter.h"

namespace df11::app {

// Transfer controls that feed the reporter's progress and stop with the cancel token.
struct ReportedTransfer {
  ReportedTransfer(Reporter& reporter, const CancelToken& cancel, const std::string& label,
                   int transfers) {
    control.threads = transfers > 0 ? transfers : 8;
    control.cancelled = [&cancel] { return cancel.cancelled(); };
    control.on_retry = [&reporter](const std::string& line) { reporter.note(line); };
    control.progress = [this, &reporter, label](const hub::TransferProgress& p) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!started) {
        reporter.progress_start(label, p.bytes_total);
        started = true;
      }
      if (p.bytes_done > reported) {
        reporter.progress_advance(p.bytes_done - reported);
        reported = p.bytes_done;
      }
    };
  }
  hub::TransferControl control;
  std::mutex mutex;
  bool started = false;
  uint64_t reported = 0;
};

// Runs one df11_hub operation with the reporter's progress; an interruption is reported with
// the token's reason ("interrupted by SIGINT").
template <typename T, typename Op>
Result<T> with_reporter(Reporter& reporter, const CancelToken& cancel, const std::string& label,
                        int transfers, Op op) {
  ReportedTransfer transfer(reporter, cancel, label, transfers);
  Result<T> result = op(transfer.control);
  reporter.progress_finish();
  if (!result && result.status().code() == ErrorCode::kInterrupted) {
    Status interrupted = cancel.check();
    if (!interrupted.is_ok()) return interrupted;
  }
  return result;
}

}  // namespace df11::app
