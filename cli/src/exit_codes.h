// Process exit codes of the df11 tool, derived from a Status (documented in README "Exit codes").
#pragma once

#include "df11/status.h"

namespace df11::app {

inline constexpr int kExitOk = 0;
inline constexpr int kExitDataError = 1;   // verification failed, mismatch, corrupt input
inline constexpr int kExitUsage = 2;       // bad command line, output exists without --force
inline constexpr int kExitOtherError = 3;  // I/O, resources, unsupported, internal

// 0 for OK; 128 + signal for kInterrupted (130 SIGINT, 143 SIGTERM); else the classes above.
int exit_code_for(const Status& status);

}  // namespace df11::app
