// One network's training state on one replica: the module, its parameters, optimizer, gradient
// reducer, loss scale and learning-rate schedule, and the state of its current update.
//
// Note [one update path]: the generator and the discriminator are each one TrainedNetwork, so a
// single code path computes, reduces (only the network being updated: the other's gradients are
// never reduced or applied) and applies either's update, with its own loss scaler and lazy
// regularisation interval; a further network (a mapping network with its own learning rate, an
// encoder) is one more of them, not another copy of the update code.
#pragma once

#include <memory>
#include <vector>

#include "distribute/gradient_reducer.h"
#include "distribute/strategy.h"
#include "gan/spec/gan_spec.h"
#include "gan/spec/loss_scaler.h"
#include "gan/spec/objective_term.h"
#include "nn/adam.h"

namespace gantry::gan {

// What an update did besides changing the weights; its losses go to the replica's statistics
// (Note [stats reporter]).
struct UpdateOutcome {
  double all_reduce_seconds = 0;  // time starting and waiting for the gradient all-reduces
  double update_seconds = 0;      // time in the optimizer step
  int skipped = 0;                // updates not applied: their all-reduced gradients were not finite
  int overflowed = 0;             // of those, overflows of a dynamic loss scale (it halves: expected)
};

struct TrainedNetwork {
  nn::ModulePtr module;
  std::vector<Tensor> params;
  std::unique_ptr<nn::Optimizer> optimizer;
  // The network's gradient buckets (Note [gradient overlap] in distribute/gradient_reducer.h),
  // built with the strategy's bucket cap.
  std::unique_ptr<distribute::GradientReducer> reducer;
  LossScaler scaler;  // identical on every replica (gan/spec/loss_scaler.h)
  OptimizerSchedules schedules;
  double base_lr = 0;  // the optimizer's learning rate before any schedule
  nn::Adam* adam = nullptr;  // the optimizer, when a beta2 schedule sets its beta2
  // The network's part of the objective (Note [objective terms]), in the order its updates add
  // them, and the statistics (Note [stats reporter]) their losses and the total are reported as:
  // term_stats[i] is terms[i]'s, -1 for a statistic-only term.
  std::vector<TermPtr> terms;
  std::vector<int> term_stats;
  int loss_stat = -1;
  bool has_collective_terms = false;  // a term joins collectives (ObjectiveTerm::joins_collectives)
  // Note [reused update state]: lives here from step to step.
  UpdateOutcome update;
};

// The training state around `module` (already on ctx.device and equal on every replica).
TrainedNetwork make_trained_network(nn::ModulePtr module, const OptimizerFn& optimizer,
                                    const OptimizerSchedules& schedules, const LossScaleConfig& loss_scale,
                                    const distribute::ReplicaContext& ctx);

// Sets the scheduled hyperparameters of the optimizer for global step `global_step`, which
// follows `images_seen` images (Note [value schedules]); allocates nothing.
void schedule_hyperparameters(TrainedNetwork& net, int64_t global_step, int64_t images_seen);

// Starts an update: its outcome reset.
void start_update(TrainedNetwork& net);

// Backward of `loss` (undefined: this replica has nothing to backpropagate) with the gradient
// all-reduce started during it; the loss is multiplied by the network's loss scale first.
void backward(TrainedNetwork& net, const Tensor& loss, const distribute::ReplicaContext& ctx);
// Gradient accumulation (Note [micro-batches] in gan/step/replica.h): the gradients of `loss` (times
// the loss scale) are held on this replica and added to the next backward's, which reduces them.
void accumulate_backward(TrainedNetwork& net, const Tensor& loss);

// Waits for the summed gradients and, when they are finite, unscales them and steps the
// optimizer from the reducer's buffers; a non-finite update is skipped on every replica alike
// (Note [non-finite updates]). Times go into the update's outcome.
void apply_update(TrainedNetwork& net);

}  // namespace gantry::gan
