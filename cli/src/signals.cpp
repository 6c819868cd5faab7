#include "signals.h"

#include <unistd.h>

#include <csignal>
#include <cstring>
#include <string>

namespace df11::app {
namespace {

// sig_atomic_t is the only type a handler may portably write; lock-free on every target.
volatile std::sig_atomic_t g_signal = 0;
CancelToken g_token;

extern "C" void on_interrupt(int sig) {
  if (g_signal != 0) {
    // Second signal: the user insists. Partial output may remain; that is their choice.
    _exit(128 + sig);
  }
  g_signal = sig;
  g_token.cancel(sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal");
}

}  // namespace

void install_signal_handlers() {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  // No SA_RESTART: a blocking read/write returns EINTR promptly; file_io retries EINTR and
  // the next poll of the token unwinds.
  action.sa_flags = 0;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  // A write past RLIMIT_FSIZE then fails with EFBIG (reported as kIo, naming the file)
  // instead of killing the process with partial output left behind.
  std::signal(SIGXFSZ, SIG_IGN);
}

int interrupt_signal() { return g_signal; }

const CancelToken& interrupt_token() { return g_token; }

void reset_interrupt_for_testing() {
  g_signal = 0;
  g_token.reset();
}

}  // namespace df11::app
