// Note [phases]: a global step is one loop over phases (GanEstimator::run_step), as
// StyleGAN2-ADA's training loop is. A phase is a run of updates that share a kind: which
// networks it updates from one fake batch, how many consecutive updates, which substep keys and
// input batch each reads, whether its first update takes the previous phase's fakes, and how
// many micro-batches each update runs. Each update runs every active objective term of its
// networks (Note [objective terms]), lazy ones included: their interval is the term's, not a
// phase of its own, so a lazy step costs no extra optimizer step. TF-GAN's G:D schedules, the
// classic "reuse the last D fakes" loop and the simultaneous (joint) step are all such lists.
#pragma once

#include <vector>

#include "base/small_vector.h"
#include "gan/spec/objective_term.h"
#include "gan/spec/train_schedule.h"

namespace gantry::gan {

struct Phase {
  // Updated from one fake batch, both gradients at the same weights ({D, G}: the joint step),
  // then applied in this order.
  SmallVector<Network, 2> networks;
  int updates = 1;        // consecutive updates; update u uses substep first_substep + u
  int first_substep = 0;  // Note [train-step keys]
  int first_batch = 0;    // the step's input batch of update 0
  bool batch_per_update = false;  // update u reads batch first_batch + u (else first_batch)
  // The first update takes the previous phase's last fake batch: the same tensors, with G's
  // history, when that phase kept them (one micro-batch), else G runs again on the same noise.
  bool reuses_previous_fake = false;
  int micro_batches = 1;  // Note [micro-batches]

  bool updates_generator() const;
  int batch_of(int update) const { return batch_per_update ? first_batch + update : first_batch; }
};

// The phases of one global step under `schedule` with `micro_batches` per update.
std::vector<Phase> phases_for(const TrainSchedule& schedule, int micro_batches);
// How many input batches a step of these phases reads.
int input_batches(const std::vector<Phase>& phases);
// How many updates of `network` a step of these phases runs.
int updates_of(const std::vector<Phase>& phases, Network network);

}  // namespace gantry::gan
