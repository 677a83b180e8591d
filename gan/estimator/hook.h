// Hooks see the chief's view of each global step (DESIGN.md, GAN layer): begin, before_step,
// after_step(results), end. They run on the calling thread, once per global step.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace gantry::gan {

class GanEstimator;

struct TimeBreakdown {
  double input_wait = 0;  // waiting for the input pipeline
  double compute = 0;     // forward and backward (slowest replica's wall time minus the rest)
  double all_reduce = 0;  // gradient all-reduce
  double update = 0;      // optimizer steps
  double total = 0;
};

struct StepResults {
  int64_t step = 0;  // the global step just completed (1-based count of steps done)
  float discriminator_loss = 0.f;  // global means (summed over replicas)
  float generator_loss = 0.f;
  std::map<std::string, float> discriminator_components;
  std::map<std::string, float> generator_components;
  // What objective terms report besides losses (Note [stats reporter]), e.g. "augment/real_sign".
  std::map<std::string, float> statistics;
  int64_t global_batch = 0;
  int discriminator_updates = 0;  // per replica in this step
  int generator_updates = 0;
  int skipped_updates = 0;  // not applied because the all-reduced gradients were not finite
  // Of skipped_updates, those a dynamic loss scale overflowed (Note [dynamic loss scale]): the scale
  // halves and training goes on, so they are not a fault.
  int loss_scale_overflows = 0;
  double images_per_second = 0;   // real examples consumed per second, all replicas
  bool augment = false;            // augmentation is on (GanSpec::augment)
  double augment_p = 0;            // its probability after this step
  double augment_real_sign = 0;    // E[sign(D(real))] at p's last adjustment (adaptive p)
  TimeBreakdown time;
};

class Hook {
 public:
  virtual ~Hook() = default;
  // Hooks run on the chief only (they write the run's outputs), except those that join
  // collectives (evaluation runs on every replica): they run on every worker of a multi-worker
  // job and write only where estimator.strategy().is_chief().
  virtual bool runs_on_every_worker() const { return false; }
  virtual void begin(GanEstimator&) {}
  virtual void before_step(GanEstimator&, int64_t /*step*/) {}
  virtual void after_step(GanEstimator&, const StepResults&) {}
  virtual void end(GanEstimator&) {}
};

}  // namespace gantry::gan
