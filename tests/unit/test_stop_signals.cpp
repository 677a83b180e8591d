// Note [stop signals off the compute threads] (hooks/stop_signals.h): with the handlers installed,
// a storm of SIGUSR1 while oneDNN's GEMM-based convolution gradients run (whose JIT kernels point
// rsp into the heap) neither crashes nor corrupts the heap, and the first signal is recorded. Each
// case runs in a child process (a death test): the handlers and the blocked mask are process-wide.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/ops/ops.h"
#include "hooks/stop_signals.h"

namespace gantry::hooks {
namespace {

// DCGAN's discriminator convolutions (ndf 48, 32x32, batch 32): their weight gradients run
// oneDNN's GEMM kernels, as the crash seen in CI did (cluster.slurm_time_limit, SIGUSR1 from Slurm).
void convolution_gradients_under_signals() {
  install_stop_signal_handlers();
  std::atomic<bool> done{false};
  std::thread storm([&done] {
    while (!done.load()) {
      kill(getpid(), SIGUSR1);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  });
  struct Layer {
    int64_t in, out, side;
  };
  const std::vector<Layer> layers = {{1, 48, 32}, {48, 96, 16}, {96, 192, 8}};
  ConvParams p;
  p.stride[0] = p.stride[1] = 2;
  p.padding[0] = p.padding[1] = 1;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < end) {
    for (const Layer& l : layers) {
      Tensor x = ops::randn({32, l.in, l.side, l.side}, RngKey{1, 1});
      Tensor gy = ops::randn({32, l.out, l.side / 2, l.side / 2}, RngKey{2, 2});
      Tensor gw = ops::conv2d_backward_weights(x, gy, Shape{l.out, l.in, 4, 4}, p);
      if (!std::isfinite(ops::sum(gw).item())) std::exit(2);
    }
  }
  done = true;
  storm.join();
  std::exit(received_stop_signal() == SIGUSR1 ? 0 : 3);
}

TEST(StopSignals, AStormOfSignalsDuringOneDnnKernelsIsRecordedAndHarmless) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(convolution_gradients_under_signals(), ::testing::ExitedWithCode(0), "stop requested");
}

// The signals go to one thread of their own: the installing thread and the threads it starts
// afterwards (OpenMP's, the replicas') block them, and a signal still stops the run.
void signals_blocked_after_install() {
  install_stop_signal_handlers();
  auto blocked = [] {
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, nullptr, &mask);
    return sigismember(&mask, SIGUSR1) == 1 && sigismember(&mask, SIGTERM) == 1 && sigismember(&mask, SIGINT) == 1;
  };
  const bool here = blocked();
  bool there = false;
  std::thread([&] { there = blocked(); }).join();
  kill(getpid(), SIGTERM);
  for (int i = 0; i < 2000 && received_stop_signal() == 0; ++i) usleep(1000);
  std::exit(here && there && received_stop_signal() == SIGTERM ? 0 : 1);
}

TEST(StopSignals, AreBlockedOnTheThreadsStartedAfterInstall) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(signals_blocked_after_install(), ::testing::ExitedWithCode(0), "stop requested");
}

}  // namespace
}  // namespace gantry::hooks
