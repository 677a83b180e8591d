// One replica's copy of the GAN: both networks and both optimizers on the replica's device.
// Every replica applies the same (all-reduced) update, so the copies stay identical.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "distribute/gradient_reducer.h"
#include "distribute/strategy.h"
#include "gan/gan_spec.h"

namespace gantry::gan {

// One named value of an update's loss ("adversarial", a penalty's name, "auxiliary_classification").
// `name` views a string that outlives the losses: a literal or a name the Replica keeps.
struct LossComponent {
  std::string_view name;
  float value = 0.f;
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

// An update in two halves, so the joint schedule can take both gradients at the same weights.
// The discriminator's: losses on real and detached fake (+ penalties, + auxiliary
// classification), gradients of D only. The generator's: gradients of G only (D's weight
// gradients are never computed). Called inside Strategy::run, they start the all-reduce of
// each gradient bucket during backward (Note [gradient overlap]); apply_* waits for them.
// The Gradients they return are the Replica's own (one per network, Note [reused update
// state]), valid until the next call for the same network.
struct Gradients {
  UpdateLosses losses;
  std::vector<Tensor> grads;  // one per parameter; undefined where unused or the shard is empty
  // The reduction started during backward, or null (outside Strategy::run: apply_* runs it).
  distribute::GradientReducer* reducing = nullptr;
  // Loss values still on the replica's device (name "" is the total): apply_* reads them into
  // `losses` after the one host sync an update needs anyway (its non-finite check), so the host
  // never waits for the forward before it queues backward.
  std::vector<std::pair<std::string_view, Tensor>> pending_losses{};
};

struct Replica {
  nn::ModulePtr generator;
  nn::ModulePtr discriminator;
  std::unique_ptr<nn::Optimizer> generator_optimizer;
  std::unique_ptr<nn::Optimizer> discriminator_optimizer;
  std::vector<Tensor> generator_params;
  std::vector<Tensor> discriminator_params;
  // Each network's gradient buckets (Note [gradient overlap] in distribute/gradient_reducer.h),
  // built with the strategy's bucket cap.
  std::unique_ptr<distribute::GradientReducer> generator_reducer;
  std::unique_ptr<distribute::GradientReducer> discriminator_reducer;
  // Each network's loss scale (spec.loss_scale; gan/loss_scaler.h): identical on every replica.
  LossScaler generator_scaler;
  LossScaler discriminator_scaler;
  double generator_base_lr = 0;  // the optimizers' learning rates before any schedule
  double discriminator_base_lr = 0;
  // True while the networks run on a stand-in for an empty shard (Note [empty shards] in
  // replica.cpp): synchronized batch norm then contributes nothing to the global statistics.
  std::shared_ptr<bool> standing_in = std::make_shared<bool>(false);
  // Note [reused update state]: each network's update state (its gradient list, its loss
  // components and pending loss values) lives here from step to step, so a steady-state step
  // allocates none of it; the penalties' names are read once (Penalty::name() makes a string).
  Gradients discriminator_update;
  Gradients generator_update;
  std::vector<std::string> penalty_names;  // spec.penalties[i]->name()
};

// This replica's slice of a global batch, already on its device.
struct ShardInput {
  Tensor real;    // (n, C, H, W)
  Tensor labels;  // (n,) i64 or undefined
  int64_t first_example = 0;  // global index of row 0
  int64_t global_batch = 0;
};

// Note [train-step keys]: noise, fake labels and penalty randomness are Philox streams keyed by
// (seed, purpose, global step, substep) at offset = global example index x values per example.
struct StepKeys {
  uint64_t seed = 0;
  int64_t step = 0;      // global step being run
  int substep = 0;       // which D or G update within the step
};

// Builds both networks and optimizers on ctx.device, then makes every replica equal replica 0.
Replica make_replica(const GanSpec& spec, const distribute::ReplicaContext& ctx, uint64_t seed);

// The fake batch of one update, kept so a G update can reuse it (TrainSchedule::reuse_fake).
struct FakeBatch {
  Tensor noise;   // (n, noise...)
  Tensor labels;  // (n,) i64 or undefined
  Tensor images;  // G(noise), with history through G unless created without grad
};

FakeBatch generate(const GanSpec& spec, Replica& replica, const ShardInput& shard,
                   const StepKeys& keys, bool record_generator);

Gradients& discriminator_gradients(const GanSpec& spec, Replica& replica, const ShardInput& shard,
                                   const FakeBatch& fake, const StepKeys& keys);
Gradients& generator_gradients(const GanSpec& spec, Replica& replica, const ShardInput& shard,
                               const FakeBatch& fake, const StepKeys& keys);
// All-reduce the gradients and apply the network's optimizer (times go into g.losses).
void apply_discriminator(Replica& replica, Gradients& g, const distribute::ReplicaContext& ctx);
void apply_generator(Replica& replica, Gradients& g, const distribute::ReplicaContext& ctx);

// Evaluation of one shard without updates (networks in eval mode, no gradients): the shard's
// share of both losses (over the global denominator) and its counts of correct D decisions.
struct EvalShard {
  float discriminator_loss = 0.f;
  float generator_loss = 0.f;
  float real_correct = 0.f;
  float fake_correct = 0.f;
};
EvalShard evaluate_shard(const GanSpec& spec, Replica& replica, const ShardInput& shard,
                         const StepKeys& keys);

}  // namespace gantry::gan
