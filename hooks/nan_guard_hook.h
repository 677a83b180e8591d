// NanGuardHook: watches every step's losses and loss components for NaN/Inf.
//
//   policy Stop: marks the shared RunHealth unhealthy (naming the step and the value, e.g.
//     "step 12: discriminator_loss is nan"), logs it and asks the estimator to stop. Hooks
//     that persist state read the RunHealth and write nothing after that, so the newest
//     checkpoint is the last good one. The caller checks health().healthy() after train() and
//     reports the failure (gan_train exits non-zero).
//   policy Skip: skip the step and count it. The estimator never applies an update whose
//     all-reduced gradients are not finite (Note [non-finite updates] in gan/step/trained_network.cpp),
//     so the bad update was skipped on every replica; the step is counted in RunHealth and logged,
//     and training continues. (An update with finite gradients but a non-finite reported loss has
//     been applied; it is counted the same way.) After `max_consecutive_skips` such steps in a row
//     (0: no limit) the run is marked unhealthy and stopped as under Stop: a NaN storm would
//     otherwise skip forever.
//
// Place it before CheckpointHook in the hook list (make_hooks does), so a checkpoint due at the
// bad step itself is already blocked.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>

#include "gan/estimator/hook.h"
#include "hooks/run_health.h"

namespace gantry::hooks {

enum class NanPolicy { Stop, Skip };

// "stop" / "skip"
const char* to_string(NanPolicy policy);

class NanGuardHook : public gan::Hook {
 public:
  NanGuardHook(NanPolicy policy, std::shared_ptr<RunHealth> health, std::ostream* log = nullptr,
               int64_t max_consecutive_skips = 0);

  void after_step(gan::GanEstimator& estimator, const gan::StepResults& results) override;

  NanPolicy policy() const { return policy_; }
  const RunHealth& health() const { return *health_; }

 private:
  // Marks the run unhealthy with `fact`, logs why and asks the estimator to stop.
  void stop(gan::GanEstimator& estimator, int64_t step, const std::string& fact, const std::string& why);

  NanPolicy policy_;
  std::shared_ptr<RunHealth> health_;
  std::ostream* log_;
  int64_t max_consecutive_skips_;
  int64_t consecutive_ = 0;  // non-finite steps in a row so far
};

}  // namespace gantry::hooks
