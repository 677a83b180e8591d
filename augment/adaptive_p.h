// The augmentation probability p: fixed, on a schedule over the images seen
// (Note [value schedules]), or moved by ADA's controller (Karras et al. 2020), which accumulates
// the sign of D's logits on real images over the discriminator updates of an interval, then moves
// p towards keeping E[sign(D(real))] at the target. Its inputs are the all-reduced sums, so
// every replica (and worker) holding one computes the same p; its state goes into checkpoints
// (gan/checkpoint/estimator_checkpoint.cpp) so a resumed run continues exactly.
#pragma once

#include <cstdint>
#include <string>

#include "augment/augment_spec.h"

namespace gantry::augment {

struct AdaptivePState {
  double p = 0.0;
  double sign_sum = 0.0;     // sum of sign(D(real)) over the examples since the last adjustment
  double sign_count = 0.0;   // how many examples that sum covers
  int64_t updates = 0;       // discriminator updates since the last adjustment
  double last_real_sign = 0.0;  // E[sign(D(real))] of the last adjustment (for logging)
};

class AdaptiveP {
 public:
  explicit AdaptiveP(const AugmentSpec& spec);

  double p() const { return state_.p; }
  const AdaptivePState& state() const { return state_; }
  // With a scheduled p (AugmentSpec::scheduled_p), sets p to its value for a step that follows
  // `images_seen` images; nothing otherwise. Called before each step reads p.
  void follow_schedule(int64_t images_seen);
  // Checks the values (p in [0, 1], counts >= 0) before taking them; errors name `source`.
  void restore(const AdaptivePState& state, const std::string& source);

  // Adds one global step: `updates` discriminator updates of `batch` images each, over which
  // sign(D(real)) summed to `sign_sum` across `sign_count` examples (all replicas). With the
  // adaptive rule on, adjusts p once `interval` updates have been seen. Returns true if it did.
  bool add_step(double sign_sum, double sign_count, int updates, int64_t batch);

 private:
  AugmentSpec spec_;
  AdaptivePState state_;
};

}  // namespace gantry::augment
