// One replica's copy of the GAN: both networks with their optimizers on the replica's device.
// Every replica applies the same (all-reduced) update, so the copies stay identical.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "distribute/strategy.h"
#include "gan/networks/style_generator.h"
#include "gan/spec/gan_spec.h"
#include "gan/spec/stats_reporter.h"
#include "gan/spec/step_keys.h"
#include "gan/step/trained_network.h"

namespace gantry::gan {

// Both networks on one replica, each with its training state (gan/step/trained_network.h).
struct Replica {
  TrainedNetwork generator;
  TrainedNetwork discriminator;
  // True while the networks run on a stand-in for an empty shard (Note [empty shards] in
  // replica.cpp): synchronized batch norm then contributes nothing to the global statistics.
  std::shared_ptr<bool> standing_in = std::make_shared<bool>(false);
  // The augmentation probability of this step (the estimator's, identical on every replica).
  double augment_p = 0.0;
  // What this replica's updates report in a step (Note [stats reporter]).
  StatsReporter stats;
  // The generator's style interface when it has one (gan/networks/style_generator.h), else null.
  StyleGenerator* style = nullptr;
  // The w_avg sums of an update (Note [w average]).
  std::vector<float> w_sum;
  // The objective terms' state by name (Note [term state] in gan/spec/objective_term.h).
  std::map<std::string, Tensor, std::less<>> term_state;

  TrainedNetwork& network(Network n) { return n == Network::Generator ? generator : discriminator; }
};

// This replica's slice of a global batch, already on its device.
struct ShardInput {
  Tensor real;    // (n, C, H, W)
  Tensor labels;  // (n,) i64 or undefined
  int64_t first_example = 0;  // global index of row 0
  int64_t global_batch = 0;
};

// Builds both networks and optimizers on ctx.device, then makes every replica equal replica 0;
// gives each network its terms of `objective` and declares their statistics, with
// `updates_per_step[network]` updates of each network in a step (Note [stats reporter]).
Replica make_replica(const GanSpec& spec, const std::vector<TermPtr>& objective, const int (&updates_per_step)[2],
                     const distribute::ReplicaContext& ctx, uint64_t seed);

// The fake batch of one update, kept so a G update can reuse it (TrainSchedule::reuse_fake).
struct FakeBatch {
  Tensor noise;   // (n, noise...)
  Tensor labels;  // (n,) i64 or undefined
  Tensor images;  // G(noise), with history through G unless created without grad
};

// Note [micro-batches]: gradient accumulation (train.micro_batches). A replica's shard is run as
// `count` equal micro-batches, each its own forward and backward; every micro-batch keeps its
// rows' global example indices (noise, labels, augmentation, penalty and dropout draws are keyed
// by them) and the global denominator of the losses, so the micro-batches' losses and gradients
// sum to the shard's. The gradients of micro-batches 0 .. count-2 are held on the replica
// (GradientReducer::accumulate) and the last one's backward reduces them all at once. Batch norm
// and minibatch standard deviation see one micro-batch at a time (docs/config.md).
//
// A MicroBatch is the one carrier of an update's input from the shard to the terms: its rows (with
// synchronized batch norm an empty part replaced by a stand-in of one example of zeros that counts
// for nothing, Note [empty shards] in gan/step/replica.cpp), its fakes, and its place in the update.
struct MicroBatch {
  ShardInput given;  // this replica's rows of the micro-batch (may be empty)
  ShardInput shard;  // what the networks run on: `given`, or the stand-in
  bool stand_in = false;
  FakeBatch fake;  // G's batch for these rows (generate), or the previous update's, reused
  int index = 0;
  int count = 1;
  bool first() const { return index == 0; }
  bool last() const { return index == count - 1; }
};

// Micro-batch `index` of `count` of `shard` (rows index*n/count .., its global indices kept; with
// count 1, the shard itself), standing in where it must; its fakes are still to be generated.
MicroBatch micro_batch(const GanSpec& spec, const ShardInput& shard, int index = 0, int count = 1);

// G's fakes for `micro`'s rows, noise and labels keyed by their global indices; with G's graph
// when `record_generator`.
FakeBatch generate(const GanSpec& spec, Replica& replica, const MicroBatch& micro, const StepKeys& keys,
                   bool record_generator);

// An update in two halves, so the joint phase can take both gradients at the same weights:
// network_gradients adds the active terms of `network` (Note [objective terms]) on one
// micro-batch and runs backward, starting the all-reduce of each gradient bucket during it
// (Note [gradient overlap]); apply_update(replica.network(network)) then waits for the sums and
// steps the optimizer (gan/step/trained_network.h). Only that network's gradients are computed. With
// micro-batches (Note [micro-batches]) the first call starts the update and the last reduces
// the sum of all of them. Each term's loss and the total are reported to replica.stats.
void network_gradients(const GanSpec& spec, Replica& replica, Network network, const MicroBatch& micro,
                       const StepKeys& keys, const distribute::ReplicaContext& ctx);

// After each G update, sums the generator's pending w over the replicas and moves w_avg once
// (Note [w average] in gan/networks/style_generator.h; every replica calls it; a no-op for a generator
// without style latents).
void update_latent_average(Replica& replica, const distribute::ReplicaContext& ctx);

// Note [evaluation]: GanEstimator::evaluate runs the objective's evaluated terms
// (ObjectiveTerm::evaluated: the adversarial ones) on held-out data, both networks in eval mode,
// without gradients and without augmentation, and reports to `stats` as training does: "D" and
// "G", the terms' components, and "eval/real_accuracy" and "eval/fake_accuracy", the fractions of
// real examples D scores above 0 and of fake ones below. One shard's share; nothing on a stand-in.
inline constexpr const char* kRealAccuracy = "eval/real_accuracy";
inline constexpr const char* kFakeAccuracy = "eval/fake_accuracy";
// Declares the statistics evaluate_shard reports (every replica alike) and returns the reporter.
StatsReporter evaluation_statistics(const std::vector<TermPtr>& objective);
void evaluate_shard(const GanSpec& spec, const std::vector<TermPtr>& objective, Replica& replica,
                    const ShardInput& shard, const StepKeys& keys, const distribute::ReplicaContext& ctx,
                    StatsReporter& stats);

}  // namespace gantry::gan
