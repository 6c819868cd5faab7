// SIGINT/SIGTERM handling for long-running subcommands: the handler only records the signal;
// loops poll check_interrupted() between bounded steps, unwind with kInterrupted, and RAII
// owners (StagingDir, OutputFile) remove partial output on the way out.
#pragma once

#include "df11/status.h"

namespace df11::app {

// Installs the SIGINT/SIGTERM handlers (first signal: set the flag; a second one exits at
// once with 128 + signal) and ignores SIGXFSZ so that RLIMIT_FSIZE comes back as EFBIG.
// Idempotent; call from main() before any work.
void install_signal_handlers();

// The signal received (SIGINT, SIGTERM), or 0.
int interrupt_signal();

// kInterrupted naming the signal once one was received, OK otherwise. Cheap (one atomic load).
Status check_interrupted();

// Clears the recorded signal (tests run several commands in one process).
void reset_interrupt_for_testing();

}  // namespace df11::app
