#include "gan/step/replica.h"

#include <optional>

#include "core/autograd/grad_mode.h"
#include "core/ops/ops.h"
#include "distribute/all_reduce_op.h"
#include "distribute/sharding.h"
#include "gan/networks/style_generator.h"
#include "gan/step/network_calls.h"
#include "gan/step/term_inputs.h"
#include "nn/batch_norm.h"

namespace gantry::gan {

namespace {

// Note [empty shards]: a replica whose shard is empty (global batch < replicas) contributes
// zero gradients. Without synchronized batch norm it skips the networks. With it, every forward
// and backward of a network joins collectives, so it runs them like the others, on a stand-in
// shard of one example of zeros (the backends do not run convolutions on empty batches). It
// joins every collective in the same order and adds exactly nothing (0 + a = a: the other
// replicas' sums are bit-identical to a run without it): its batch norm statistics are
// multiplied by 0 before they are summed, the sums it receives pass their gradient on times 0
// (else its stand-in outputs would leak into the others' input gradients, which WGAN-GP and R1
// differentiate), and its loss is multiplied by 0.
bool stands_in(const GanSpec& spec, const ShardInput& shard) {
  return spec.sync_batch_norm && shard.real.size(0) == 0;
}

ShardInput stand_in_for(const ShardInput& shard) {
  ShardInput s = shard;
  Shape shape = shard.real.shape();
  shape[0] = 1;
  s.real = ops::zeros(shape, shard.real.device());
  if (shard.labels.defined()) s.labels = ops::zeros(Shape{1}, shard.labels.device(), DType::I64);
  return s;
}

// Marks the replica as standing in while it lives (when `on`); nests.
class StandInScope {
 public:
  StandInScope(Replica& replica, bool on) : flag_(*replica.standing_in), previous_(flag_) {
    flag_ = flag_ || on;
  }
  ~StandInScope() { flag_ = previous_; }
  StandInScope(const StandInScope&) = delete;
  StandInScope& operator=(const StandInScope&) = delete;

 private:
  bool& flag_;
  bool previous_;
};

// Every batch norm layer of `net` normalises with statistics summed over the replicas; a
// stand-in's statistics count for nothing.
void synchronize_batch_norm(nn::Module& net, const std::shared_ptr<bool>& standing_in) {
  nn::ReplicaSum sum = [standing_in](const Tensor& local) {
    if (!*standing_in) return distribute::sum_over_replicas(local);
    Tensor total = distribute::sum_over_replicas(ops::mul(local, 0.f));
    return ops::add(ops::mul(total, 0.f), total.detach());  // the value of total, gradient 0
  };
  for (auto& [path, m] : net.named_modules())
    if (auto* bn = dynamic_cast<nn::BatchNorm*>(m)) bn->set_replica_sum(sum);
}

// Ends one micro-batch of an update: the last reduces, the others hold their gradients on the
// replica.
void finish_micro_batch(TrainedNetwork& net, const Tensor& loss, const distribute::ReplicaContext& ctx,
                        const MicroBatch& micro) {
  if (!micro.last()) {
    accumulate_backward(net, loss);
    return;
  }
  backward(net, loss, ctx);
}

// Gives each network its terms of the objective and declares the statistics of its replica
// (Note [stats reporter]): "D" and "G", an update's total loss; "D/<term>" and "G/<term>", each
// term's loss; then each term's own. Every replica declares them in the same order.
void declare_objective(Replica& r, const std::vector<TermPtr>& objective, const int (&updates_per_step)[2],
                       Device device) {
  for (const Network n : {Network::Discriminator, Network::Generator}) {
    TrainedNetwork& net = r.network(n);
    const std::string prefix = n == Network::Discriminator ? "D" : "G";
    const int per_step = std::max(1, updates_per_step[static_cast<int>(n)]);
    net.loss_stat = r.stats.declare({prefix, StatReduce::SumOfShares, per_step});
    for (const TermPtr& term : objective) {
      if (term->network() != n) continue;
      net.terms.push_back(term);
      net.term_stats.push_back(
          term->has_loss() ? r.stats.declare({prefix + "/" + term->name(), StatReduce::SumOfShares, per_step}) : -1);
      net.has_collective_terms = net.has_collective_terms || term->joins_collectives();
      term->check_networks(r);
      for (StatDeclaration& d : term->statistics()) r.stats.declare(std::move(d));
      for (const TermStateDeclaration& d : term->state()) {  // names unique and values given: objective_of
        const auto size = static_cast<int64_t>(d.initial.size());
        r.term_state.emplace(d.name, ops::from_vector(d.initial, Shape{size}, device));
      }
    }
  }
}

}  // namespace

namespace {

// Rows index*n/count .. of `shard`, its global indices kept; with count 1, the shard itself.
ShardInput rows_of(const ShardInput& shard, int index, int count) {
  if (count == 1 && index == 0) return shard;  // no split (an empty shard included)
  const int64_t n = shard.real.size(0);
  GANTRY_CHECK(count >= 1 && index >= 0 && index < count && n % count == 0, "gan: micro-batch ", index, " of ",
               count, ": the shard of ", n, " examples does not split into ", count, " equal micro-batches");
  const int64_t size = n / count, begin = index * size;
  ShardInput m = shard;
  m.real = ops::slice(shard.real, 0, begin, begin + size);
  if (shard.labels.defined()) m.labels = ops::slice(shard.labels, 0, begin, begin + size);
  m.first_example = shard.first_example + begin;
  return m;
}

}  // namespace

MicroBatch micro_batch(const GanSpec& spec, const ShardInput& shard, int index, int count) {
  MicroBatch m;
  m.given = rows_of(shard, index, count);
  m.stand_in = stands_in(spec, m.given);
  m.shard = m.stand_in ? stand_in_for(m.given) : m.given;
  m.index = index;
  m.count = count;
  return m;
}

Replica make_replica(const GanSpec& spec, const std::vector<TermPtr>& objective, const int (&updates_per_step)[2],
                     const distribute::ReplicaContext& ctx, uint64_t seed) {
  nn::ModulePtr g = spec.generator_fn(ctx.device, RngKey{seed, stream_id(kInit, 0)});
  nn::ModulePtr d = spec.discriminator_fn(ctx.device, RngKey{seed, stream_id(kInit, 1)});
  GANTRY_CHECK(g && d, "gan: the generator and discriminator functions must return a module");
  Replica r;
  for (const nn::ModulePtr& net : {g, d}) {
    net->to(ctx.device);
    if (spec.sync_batch_norm) synchronize_batch_norm(*net, r.standing_in);
  }
  // Variables start identical everywhere: replica 0's values win (Note [bucket order]).
  {
    NoGradGuard no_grad;
    std::vector<Tensor> state;
    for (const nn::ModulePtr& net : {g, d})
      for (auto& [name, t] : net->state_dict())
        if (t.dtype() == DType::F32) state.push_back(t);
    ctx.broadcast_from_first(state);
  }
  r.generator =
      make_trained_network(g, spec.generator_optimizer, spec.generator_optimizer_schedules, spec.loss_scale, ctx);
  r.discriminator = make_trained_network(d, spec.discriminator_optimizer, spec.discriminator_optimizer_schedules,
                                         spec.loss_scale, ctx);
  r.style = dynamic_cast<StyleGenerator*>(g.get());
  declare_objective(r, objective, updates_per_step, ctx.device);
  return r;
}

FakeBatch generate(const GanSpec& spec, Replica& replica, const MicroBatch& micro, const StepKeys& keys,
                   bool record_generator) {
  const ShardInput& shard = micro.shard;
  FakeBatch fake;
  const int64_t n = shard.real.size(0);
  const Device device = shard.real.device();
  Shape noise_shape{n};
  for (int64_t d : spec.noise_shape) noise_shape.push_back(d);
  const int64_t per_example = spec.noise_shape.numel();
  fake.noise = ops::randn(noise_shape, key_for(keys, kNoise), shard.first_example * per_example, device);
  if (spec.num_classes > 0)
    fake.labels = random_labels(spec.num_classes, n, key_for(keys, kFakeLabels), shard.first_example, device);
  if (n == 0) return fake;
  autograd::GradModeGuard mode(record_generator);
  StandInScope scope(replica, micro.stand_in);
  nn::Module& g = *replica.generator.module;
  g.set_rng(key_for(keys, kDropoutG), shard.first_example);
  // The forwards G's updates backpropagate through move w_avg, no others (Note [w average]).
  if (replica.style) replica.style->set_track_w_avg(record_generator);
  fake.images = run_generator(spec, g, fake.noise, fake.labels);
  if (replica.style) replica.style->set_track_w_avg(false);
  return fake;
}

namespace {

Tensor plus(const Tensor& sum, const Tensor& term) { return sum.defined() ? ops::add(sum, term) : term; }

// Adds the terms of `net` that `collective` selects (those that join collectives, or the others)
// active at this step to `loss`, reporting each.
void add_terms(TrainedNetwork& net, bool collective, TermInputs& in, Tensor& loss) {
  for (size_t i = 0; i < net.terms.size(); ++i) {
    const ObjectiveTerm& term = *net.terms[i];
    if (term.joins_collectives() != collective || !term.active_at(in.keys().step)) continue;
    Tensor t = term.loss(in);
    if (!term.has_loss() || !t.defined()) continue;
    in.report(net.term_stats[i], t);
    loss = plus(loss, t);
  }
}

}  // namespace

void network_gradients(const GanSpec& spec, Replica& replica, Network network, const MicroBatch& micro,
                       const StepKeys& keys, const distribute::ReplicaContext& ctx) {
  TrainedNetwork& net = replica.network(network);
  if (micro.first()) start_update(net);
  Tensor loss;
  // One set of inputs (and so one D forward per batch) for all the terms, except on a stand-in,
  // whose collective terms see the shard as given.
  std::optional<TermInputs> in;
  if (micro.shard.real.size(0) > 0) {
    StandInScope scope(replica, micro.stand_in);
    in.emplace(spec, replica, network, micro, micro.shard, keys, ctx, replica.stats);
    add_terms(net, false, *in, loss);
    if (micro.stand_in && loss.defined()) loss = ops::mul(loss, 0.f);  // counts zero: Note [empty shards]
  }
  if (net.has_collective_terms) {  // they run on every replica, outside a stand-in
    if (!in || micro.stand_in) in.emplace(spec, replica, network, micro, micro.given, keys, ctx, replica.stats);
    add_terms(net, true, *in, loss);
  }
  if (!micro.stand_in && loss.defined()) replica.stats.report(net.loss_stat, loss);
  // Only this network's parameters are asked for: the other's weight gradients are pruned.
  finish_micro_batch(net, loss, ctx, micro);  // an empty shard (no loss) contributes zeros
}

void update_latent_average(Replica& replica, const distribute::ReplicaContext& ctx) {
  if (!replica.style) return;
  replica.style->take_w_sum(replica.w_sum);
  ctx.communicator->all_reduce(replica.w_sum, distribute::ReduceKind::Sum);
  replica.style->update_w_avg(replica.w_sum);
}

StatsReporter evaluation_statistics(const std::vector<TermPtr>& objective) {
  StatsReporter stats;
  for (const Network n : {Network::Discriminator, Network::Generator}) {
    const std::string prefix = n == Network::Discriminator ? "D" : "G";
    stats.declare({prefix, StatReduce::SumOfShares, 1});
    for (const TermPtr& term : objective)
      if (term->network() == n && term->evaluated() && term->has_loss())
        stats.declare({prefix + "/" + term->name(), StatReduce::SumOfShares, 1});
  }
  stats.declare({kRealAccuracy, StatReduce::MeanOfElements});
  stats.declare({kFakeAccuracy, StatReduce::MeanOfElements});
  return stats;
}

void evaluate_shard(const GanSpec& spec, const std::vector<TermPtr>& objective, Replica& replica,
                    const ShardInput& given, const StepKeys& keys, const distribute::ReplicaContext& ctx,
                    StatsReporter& stats) {
  // Eval mode communicates only for batch norm without running statistics (Note [empty shards]).
  MicroBatch micro = micro_batch(spec, given);
  const ShardInput& shard = micro.shard;
  if (shard.real.size(0) == 0) return;
  StandInScope scope(replica, micro.stand_in);
  NoGradGuard no_grad;
  nn::Module& g = *replica.generator.module;
  nn::Module& d = *replica.discriminator.module;
  const bool g_training = g.is_training(), d_training = d.is_training();
  g.eval();
  d.eval();
  micro.fake = generate(spec, replica, micro, keys, false);
  // one set of inputs for both networks' terms: D sees each batch once
  TermInputs in(spec, replica, Network::Discriminator, micro, shard, keys, ctx, stats, /*evaluation=*/true);
  for (const Network n : {Network::Discriminator, Network::Generator}) {
    const std::string prefix = n == Network::Discriminator ? "D" : "G";
    Tensor loss;
    for (const TermPtr& term : objective) {
      if (term->network() != n || !term->evaluated()) continue;
      Tensor t = term->loss(in);
      if (!term->has_loss() || !t.defined()) continue;
      in.report(prefix + "/" + term->name(), t);
      loss = plus(loss, t);
    }
    in.report(prefix, loss);
  }
  in.report(kRealAccuracy, ops::gt(in.real_logits(), 0.f));
  in.report(kFakeAccuracy, ops::lt(in.fake_logits(), ops::zeros({}, shard.real.device())));
  g.train(g_training);
  d.train(d_training);
}

}  // namespace gantry::gan
