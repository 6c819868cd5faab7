#include "exit_codes.h"

#include <csignal>

#include "signals.h"

namespace df11::app {

int exit_code_for(const Status& status) {
  switch (status.code()) {
    case ErrorCode::kOk:
      return kExitOk;
    case ErrorCode::kInterrupted: {
      const int sig = interrupt_signal();
      return 128 + (sig != 0 ? sig : SIGINT);
    }
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kExists:
      return kExitUsage;
    // The data itself is wrong: a container or group that does not validate, a checksum or
    // comparison that fails.
    case ErrorCode::kHeaderTooLarge:
    case ErrorCode::kTruncated:
    case ErrorCode::kBadJson:
    case ErrorCode::kBadDtype:
    case ErrorCode::kBadShape:
    case ErrorCode::kBadOffsets:
    case ErrorCode::kDuplicateName:
    case ErrorCode::kOverflow:
    case ErrorCode::kBadMetadata:
    case ErrorCode::kBadGroup:
    case ErrorCode::kBadLut:
    case ErrorCode::kBadGap:
    case ErrorCode::kBadOutputPositions:
    case ErrorCode::kCorruptData:
    case ErrorCode::kMismatch:
    case ErrorCode::kBadConfig:
      return kExitDataError;
    case ErrorCode::kIo:
    case ErrorCode::kUncodable:
    case ErrorCode::kResourceLimit:
    case ErrorCode::kNotFound:
    case ErrorCode::kCuda:
    case ErrorCode::kUnsupported:
    case ErrorCode::kInternal:
      return kExitOtherError;
  }
  return kExitOtherError;
}

}  // namespace df11::app
