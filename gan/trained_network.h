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
#include <string_view>
#include <utility>
#include <vector>

#include "distribute/gradient_reducer.h"
#include "distribute/strategy.h"
#include "gan/gan_spec.h"
#include "gan/loss_scaler.h"

namespace gantry::gan {

// One named value of an update's loss ("adversarial", a penalty's name, "auxiliary_classification").
// `name` views a string that outlives the losses: a literal or a name the Replica keeps.
struct LossComponent {
  std::string_view name;
  float value = 0.f;
  // Whether the update computed it: a lazy regulariser (R1 or path length with an interval)
  // runs on some steps only, and the step's results keep its last computed value on the others.
  bool computed = false;
};

// Loss values of one update on one replica; summed over replicas they give the global means.
struct UpdateLosses {
  float total = 0.f;
  // Every component the update reports, each name once, in the same order on every replica
  // (Note [loss components]); a list that keeps its capacity from update to update.
  std::vector<LossComponent> components;
  double all_reduce_seconds = 0;  // time starting and waiting for the gradient all-reduces
  double update_seconds = 0;      // time in the optimizer step
  int skipped = 0;                // updates not applied: their all-reduced gradients were not finite

  // The component named `name`, or null.
  const LossComponent* find(std::string_view name) const;
  LossComponent* find(std::string_view name);
};

// The update a network is in the middle of: its losses, and the loss values still on the
// replica's device (name "" is the total), read after the one host sync an update needs anyway
// (its non-finite check), so the host never waits for the forward before it queues backward.
struct NetworkUpdate {
  UpdateLosses losses;
  std::vector<std::pair<std::string_view, Tensor>> pending_losses;

  // Keeps `value` (detached) to be read into the component `name` when the update is applied.
  void add_pending(std::string_view name, const Tensor& value);
};

struct TrainedNetwork {
  nn::ModulePtr module;
  std::vector<Tensor> params;
  std::unique_ptr<nn::Optimizer> optimizer;
  // The network's gradient buckets (Note [gradient overlap] in distribute/gradient_reducer.h),
  // built with the strategy's bucket cap.
  std::unique_ptr<distribute::GradientReducer> reducer;
  LossScaler scaler;  // identical on every replica (gan/loss_scaler.h)
  std::shared_ptr<const nn::LrSchedule> lr_schedule;  // null: constant learning rate
  double base_lr = 0;  // the optimizer's learning rate before any schedule
  // The components every update of this network reports (Note [loss components]).
  std::vector<std::string_view> loss_components;
  // Note [reused update state]: lives here from step to step, so a steady-state step allocates
  // none of it.
  NetworkUpdate update;
};

// The training state around `module` (already on ctx.device and equal on every replica).
TrainedNetwork make_trained_network(nn::ModulePtr module, const OptimizerFn& optimizer,
                                    std::shared_ptr<const nn::LrSchedule> lr_schedule,
                                    const LossScaleConfig& loss_scale, const distribute::ReplicaContext& ctx);

// Sets the optimizer's learning rate for `global_step` from the schedule, if there is one.
void schedule_learning_rate(TrainedNetwork& net, int64_t global_step);

// Starts an update: losses reset to the network's components (all zero), nothing pending;
// keeps every list's capacity.
NetworkUpdate& start_update(TrainedNetwork& net);

// Backward of `loss` (undefined: this replica has nothing to backpropagate) with the gradient
// all-reduce started during it; the loss is multiplied by the network's loss scale first.
void backward(TrainedNetwork& net, const Tensor& loss, const distribute::ReplicaContext& ctx);
// Gradient accumulation (Note [micro-batches] in gan/replica.cpp): the gradients of `loss` (times
// the loss scale) are held on this replica and added to the next backward's, which reduces them.
void accumulate_backward(TrainedNetwork& net, const Tensor& loss);

// Waits for the summed gradients, reads the pending losses and, when the gradients are finite,
// unscales them and steps the optimizer from the reducer's buffers; a non-finite update is
// skipped on every replica alike (Note [non-finite updates]). Times go into the update's losses.
void apply_update(TrainedNetwork& net);

}  // namespace gantry::gan
