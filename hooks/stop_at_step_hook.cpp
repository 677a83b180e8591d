#include "hooks/stop_at_step_hook.h"

#include "base/error.h"
#include "gan/estimator/gan_estimator.h"

namespace gantry::hooks {

StopAtStepHook::StopAtStepHook(int64_t last_step) : last_step_(last_step) {
  GANTRY_CHECK(last_step_ >= 0, "StopAtStepHook: last_step: expected >= 0, found ", last_step_);
}

void StopAtStepHook::begin(gan::GanEstimator& estimator) {
  if (estimator.global_step() >= last_step_) estimator.request_stop();
}

void StopAtStepHook::after_step(gan::GanEstimator& estimator, const gan::StepResults& results) {
  if (results.step >= last_step_) estimator.request_stop();
}

}  // namespace gantry::hooks
