// TF-GAN's GANTrainSteps: how many discriminator and generator updates one global step runs.
#pragma once

#include <string>

namespace gantry::gan {

// Each global step runs `discriminator_steps` D updates, then `generator_steps` G updates,
// every one of them on every replica.
struct TrainSchedule {
  int generator_steps = 1;
  int discriminator_steps = 1;
  // The first G update reuses the last D update's noise and generator forward (the fake batch),
  // as the classic DCGAN loop does; numerically the same as drawing that noise again.
  bool reuse_fake = true;
  // Joint: one generator forward per step, both gradients computed at the same weights, then
  // both updates applied (simultaneous gradient descent); counts must be 1 and 1.
  bool joint = false;
};

// The one check of a schedule, for the config (path "train.schedule") and for a GanSpec built
// in code (the estimator): non-negative counts with at least one update; joint needs 1 and 1.
void check_schedule(const TrainSchedule& schedule, const std::string& path);

}  // namespace gantry::gan
