// GANEstimator: trains a GanSpec on a distribution strategy. Every global step runs the
// schedule's D and G updates on every replica; each update shards the global batch, computes
// the losses over the global denominator, all-reduces the gradients of the network being
// updated and applies the same optimizer step everywhere (see DESIGN.md, Distribution).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "augment/adaptive_p.h"
#include "base/function_ref.h"
#include "data/example.h"
#include "distribute/strategy.h"
#include "gan/estimator/hook.h"
#include "gan/step/phases.h"
#include "gan/step/replica.h"
#include "nn/ema.h"

namespace gantry::gan {

// Produces the next global batch (images (N, C, H, W) f32 on the CPU, labels (N,) when
// conditional).
using BatchSource = std::function<data::Batch()>;

// Input for `input: per_replica_pipelines`: every replica reads its own shard of each global
// batch from its own pipeline (shard sizes as distribute::shard_batch(global_batch, replicas)
// gives). `next` runs on the replica's thread, once per update.
struct PerReplicaInput {
  std::function<data::Batch(const distribute::ReplicaContext&)> next;
  int64_t global_batch = 0;
};

// One global step's input: a global batch per update, or each local replica's shard per update.
// The estimator keeps one from step to step (its lists keep their capacity) and drops its
// batches after each step.
struct StepInput {
  std::vector<data::Batch> global;                    // [update]
  std::vector<std::vector<data::Batch>> per_replica;  // [local replica][update]
  int64_t global_batch = 0;
};

struct EvalResults {
  int64_t steps = 0;
  int64_t examples = 0;
  float discriminator_loss = 0.f;  // means over the evaluated examples
  float generator_loss = 0.f;
  float real_accuracy = 0.f;  // fraction of real examples with logit > 0
  float fake_accuracy = 0.f;  // fraction of fake examples with logit < 0
};

class GanEstimator {
 public:
  GanEstimator(GanSpec spec, std::shared_ptr<distribute::Strategy> strategy, uint64_t seed);

  // Trains until the global step reaches max_steps (max-steps semantics: a resumed estimator
  // stops at the same step). Hooks run on the chief (see Hook::runs_on_every_worker).
  void train(const BatchSource& input, int64_t max_steps,
             const std::vector<std::shared_ptr<Hook>>& hooks = {});
  void train(const PerReplicaInput& input, int64_t max_steps,
             const std::vector<std::shared_ptr<Hook>>& hooks = {});
  // Samples from replica 0's generator (or the EMA generator) in eval mode:
  // noise (N, noise...) [, labels (N,)].
  Tensor predict(const Tensor& noise, const Tensor& labels = {}, bool use_ema = false);
  // Losses and D's accuracy over `steps` global batches, without updating anything (the
  // evaluated terms, both networks in eval mode; penalties are not evaluated: Note [evaluation]).
  // Runs on every replica.
  EvalResults evaluate(const BatchSource& input, int64_t steps);
  // The EMA generator, or null when the spec has none.
  nn::ModulePtr generator_ema() const { return ema_ ? ema_->module_ptr() : nullptr; }

  int64_t global_step() const { return global_step_; }
  void set_global_step(int64_t step) { global_step_ = step; }
  const GanSpec& spec() const { return spec_; }
  distribute::Strategy& strategy() { return *strategy_; }
  uint64_t seed() const { return seed_; }
  Replica& replica(int local_index) { return replicas_.at(local_index); }
  int num_local_replicas() const { return static_cast<int>(replicas_.size()); }
  // The augmentation probability and ADA's statistics (spec().augment); checkpoints save them.
  augment::AdaptiveP& augment_p() { return augment_p_; }
  // Asks train() to stop after the current step (stop hooks, NaN guard).
  void request_stop() { stop_requested_ = true; }

 private:
  // draw(updates, input) fills `input` (emptied, capacity kept) with the next step's batches.
  void train_loop(FunctionRef<void(int updates, StepInput& input)> draw, int64_t max_steps,
                  const std::vector<std::shared_ptr<Hook>>& hooks);
  // Runs one global step, which follows `images_seen` images (Note [value schedules]), on every
  // replica and writes its results into `r` (Note [reused update state] in gan/step/trained_network.h:
  // `r` and the per-replica totals are kept from step to step).
  void run_step(const StepInput& input, int64_t images_seen, StepResults& r);
  bool any_worker_requested_stop();

  // Writes the step's statistics (replica 0's, reduced over all) into `r` (Note [stats
  // reporter]); a statistic not reported this step keeps its last value. Then the values the
  // logged schedules took in it (Note [logged schedules]).
  void write_statistics(const StatsReporter& stats, int64_t images_seen, StepResults& r);

  // One replica's update counts and times of a global step.
  struct ReplicaTotals {
    double all_reduce = 0, update = 0, wall = 0;
    int skipped = 0, overflowed = 0;
  };

  GanSpec spec_;
  std::shared_ptr<distribute::Strategy> strategy_;
  uint64_t seed_;
  std::vector<Phase> phases_;  // Note [phases]
  std::vector<TermPtr> objective_;  // gan/objective/objective.h
  std::vector<Replica> replicas_;
  std::optional<nn::Ema> ema_;
  augment::AdaptiveP augment_p_;
  std::vector<ReplicaTotals> totals_;  // [local replica], reused by every step
  StepInput step_input_;               // reused by every step
  StepResults step_results_;           // reused by every step (its maps keep their nodes)
  // write_statistics' target for each statistic and logged schedule, in the results it last wrote
  std::vector<float*> statistic_slots_;
  const StepResults* statistics_for_ = nullptr;
  int real_sign_ = -1;  // ADA's statistic, when the objective reports it
  int64_t global_step_ = 0;
  bool stop_requested_ = false;
};

}  // namespace gantry::gan
