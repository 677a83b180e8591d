#include "hooks/stop_signals.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <mutex>
#include <thread>

namespace gantry::hooks {

namespace {

std::atomic<int> first_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the handler may only touch lock-free atomics");

// Only async-signal-safe calls here: atomics, write, signal, pthread_sigmask, raise.
void on_stop_signal(int signal) {
  int expected = 0;
  if (first_signal.compare_exchange_strong(expected, signal)) {
    const char message[] = "\nstop requested: finishing this step and saving a checkpoint "
                           "(Ctrl-C again to abort at once)\n";
    [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, message, sizeof(message) - 1);
    return;
  }
  if (signal == SIGINT) {  // the second Ctrl-C: abort now, as without a handler
    std::signal(SIGINT, SIG_DFL);
    sigset_t interrupt;
    sigemptyset(&interrupt);
    sigaddset(&interrupt, SIGINT);
    pthread_sigmask(SIG_UNBLOCK, &interrupt, nullptr);  // on the signal thread, blocked until now
    std::raise(SIGINT);
  }
}

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : {SIGTERM, SIGINT, SIGUSR1}) sigaddset(&set, signal);
  return set;
}

}  // namespace

void install_stop_signal_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    // The handler stays, for a thread that existed before this call and so does not block them.
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // a blocking read or wait continues; the step loop polls the flag
    for (int signal : {SIGTERM, SIGINT, SIGUSR1}) sigaction(signal, &action, nullptr);
    // Note [stop signals off the compute threads]
    const sigset_t set = stop_signals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread([set] {
      for (;;) {
        int signal = 0;
        if (sigwait(&set, &signal) == 0) on_stop_signal(signal);
      }
    }).detach();
  });
}

int received_stop_signal() { return first_signal.load(); }

const char* stop_signal_name(int signal) {
  switch (signal) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    default: return "signal";
  }
}

}  // namespace gantry::hooks
