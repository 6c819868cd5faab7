#include "exit_codes.h"

#include <csignal>

#include "signals.h"

namespace df11::app {

int exit_code_for(const Status& status) {
  switch (error_class(status.code())) {
    case ErrorClass::kNone:
      return kExitOk;
    case ErrorClass::kCancelled: {
      const int sig = interrupt_signal();
      return 128 + (sig != 0 ? sig : SIGINT);
    }
    case ErrorClass::kUsage:
      return kExitUsage;
    case ErrorClass::kData:
      return kExitDataError;
    case ErrorClass::kEnvironment:
      return kExitOtherError;
  }
  return kExitOtherError;
}

}  // namespace df11::app
