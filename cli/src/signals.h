// SIGINT/SIGTERM handling for the df11 tool: the handler records the signal and cancels the
// process's CancelToken, which the tool hands to every pipeline; the pipelines' loops poll it
// between bounded steps and unwind with kInterrupted, and RAII owners (StagingDir,
// OutputFile) remove partial output on the way out.
#pragma once

#include "df11/cancel.h"

namespace df11::app {

// Installs the SIGINT/SIGTERM handlers (first signal: set the flag; a second one exits at
// once with 128 + signal) and ignores SIGXFSZ so that RLIMIT_FSIZE comes back as EFBIG.
// Idempotent; call from main() before any work.
void install_signal_handlers();

// The signal received (SIGINT, SIGTERM), or 0.
int interrupt_signal();

// The token the signal handlers cancel ("SIGINT", "SIGTERM"): pass it to the pipelines.
const CancelToken& interrupt_token();

// Clears the recorded signal (tests run several commands in one process).
void reset_interrupt_for_testing();

}  // namespace df11::app
