#include "signals.h"

#include <unistd.h>

#include <csignal>
#include <cstring>
#include <string>

#include "df11/file_io.h"

namespace df11::app {
namespace {

// sig_atomic_t is the only type a handler may portably write; lock-free on every target.
volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_interrupt(int sig) {
  if (g_signal != 0) {
    // Second signal: the user insists. Partial output may remain; that is their choice.
    _exit(128 + sig);
  }
  g_signal = sig;
}

}  // namespace

void install_signal_handlers() {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  // No SA_RESTART: a blocking read/write returns EINTR promptly; file_io retries EINTR and
  // the next check_interrupted() unwinds.
  action.sa_flags = 0;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  ignore_sigxfsz();
}

int interrupt_signal() { return g_signal; }

Status check_interrupted() {
  const int sig = g_signal;
  if (sig == 0) return Status::ok();
  return Status(ErrorCode::kInterrupted,
                std::string("interrupted by ") + (sig == SIGINT    ? "SIGINT"
                                                  : sig == SIGTERM ? "SIGTERM"
                                                                   : "a signal"));
}

void reset_interrupt_for_testing() { g_signal = 0; }

}  // namespace df11::app
