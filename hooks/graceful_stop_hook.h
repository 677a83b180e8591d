// GracefulStopHook: asks the estimator to stop after the current step when a stop signal
// arrived (hooks/stop_signals.h) or when one more step would pass the wall-clock limit
// (train.max_wall_seconds / --time-limit). It runs on every worker (Note [polite stop]).
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "gan/estimator/hook.h"

namespace gantry::hooks {

class GracefulStopHook : public gan::Hook {
 public:
  // `signal` returns the stop signal received so far, or 0 (received_stop_signal in the app,
  // a fake in tests). max_wall_seconds 0: no time limit.
  GracefulStopHook(std::function<int()> signal, double max_wall_seconds);

  bool runs_on_every_worker() const override { return true; }
  void begin(gan::GanEstimator& estimator) override;
  void after_step(gan::GanEstimator& estimator, const gan::StepResults& results) override;

  // Why this worker asked to stop ("SIGTERM", "the time limit of 3600 s"), "" if it did not.
  const std::string& reason() const { return reason_; }

 private:
  using Clock = std::chrono::steady_clock;
  std::function<int()> signal_;
  double max_wall_seconds_;
  Clock::time_point start_;
  std::string reason_;
};

}  // namespace gantry::hooks
