// Shared verdict on the training run's numerical health, written by NanGuardHook and read by
// the hooks that persist state (CheckpointHook): once a run is marked unhealthy, no checkpoint
// of its state is written any more, so `latest` keeps pointing at the last good one.
// Hooks run on the chief's training thread, one after another, so no locking is needed.
#pragma once

#include <cstdint>
#include <string>

#include "gan/estimator/hook.h"

namespace gantry::hooks {

class RunHealth {
 public:
  bool healthy() const { return unhealthy_step_ < 0; }
  // The step at which the run became unhealthy (-1 while healthy) and why.
  int64_t unhealthy_step() const { return unhealthy_step_; }
  const std::string& reason() const { return reason_; }
  // Marks the run unhealthy at `step` (the first call wins).
  void mark_unhealthy(int64_t step, std::string reason);

  // Steps with a non-finite loss that were tolerated (nan_policy "skip").
  int64_t tolerated_nonfinite_steps() const { return tolerated_; }
  void count_tolerated() { ++tolerated_; }

 private:
  int64_t unhealthy_step_ = -1;
  std::string reason_;
  int64_t tolerated_ = 0;
};

// The first non-finite value of a step's results, e.g. "discriminator_loss" or
// "discriminator_components.gradient_penalty", "gradients" when an update was skipped for
// non-finite gradients (other than a dynamic loss scale's overflow), or "" when all is finite.
std::string first_nonfinite(const gan::StepResults& results);

}  // namespace gantry::hooks
