#include "hooks/graceful_stop_hook.h"

#include "base/error.h"
#include "gan/estimator/gan_estimator.h"
#include "hooks/stop_signals.h"

namespace gantry::hooks {

GracefulStopHook::GracefulStopHook(std::function<int()> signal, double max_wall_seconds)
    : signal_(std::move(signal)), max_wall_seconds_(max_wall_seconds) {
  GANTRY_CHECK(signal_, "GracefulStopHook: expected a signal source");
}

void GracefulStopHook::begin(gan::GanEstimator&) {
  start_ = Clock::now();
  reason_.clear();
}

void GracefulStopHook::after_step(gan::GanEstimator& estimator, const gan::StepResults& results) {
  if (!reason_.empty()) return;
  if (int signal = signal_()) {
    reason_ = stop_signal_name(signal);
  } else if (max_wall_seconds_ > 0) {
    // Stop when one more step like the last one would end past the limit.
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    if (elapsed + results.time.total >= max_wall_seconds_)
      reason_ = detail::concat("the time limit of ", max_wall_seconds_, " s");
  }
  if (!reason_.empty()) estimator.request_stop();
}

}  // namespace gantry::hooks
