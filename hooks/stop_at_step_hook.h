// StopAtStepHook: asks the estimator to stop once the global step reaches `last_step`
// (TF's StopAtStepHook with last_step), also when a resumed run already starts there.
#pragma once

#include <cstdint>

#include "gan/estimator/hook.h"

namespace gantry::hooks {

class StopAtStepHook : public gan::Hook {
 public:
  explicit StopAtStepHook(int64_t last_step);

  void begin(gan::GanEstimator& estimator) override;
  void after_step(gan::GanEstimator& estimator, const gan::StepResults& results) override;

  int64_t last_step() const { return last_step_; }

 private:
  int64_t last_step_;
};

}  // namespace gantry::hooks
