#include "gan/replica.h"

#include "augment/augment.h"
#include "core/autograd/grad_mode.h"
#include "distribute/all_reduce_op.h"
#include "distribute/sharding.h"
#include "losses/loss_context.h"
#include "nn/batch_norm.h"

namespace gantry::gan {

namespace {

const Tensor kNoLabels;  // an undefined tensor, for a critic without labels

enum Purpose : uint64_t {
  kInit = 1, kNoise = 2, kFakeLabels = 3, kPenalty = 4, kDropoutD = 5, kDropoutG = 6, kAugmentReal = 7, kAugmentFake = 8,
  kPathLengthNoise = 9, kPathLengthLabels = 10, kPathLengthImage = 11, kPathLengthG = 12
};

RngKey key_for(const StepKeys& k, Purpose purpose) {
  return RngKey{k.seed, stream_id(purpose, static_cast<uint64_t>(k.step), static_cast<uint64_t>(k.substep))};
}

losses::LossContext loss_context(const ShardInput& shard, const StepKeys& keys) {
  losses::LossContext c;
  c.denominator = static_cast<float>(shard.global_batch);
  c.key = key_for(keys, kPenalty);
  c.first_example = static_cast<uint64_t>(shard.first_example);
  c.step = keys.step;
  return c;
}

// The images D sees: augmented (spec.augment) with the replica's p, each example by its global
// index, so 1 and R replicas augment identically. Real images (and the penalties' inputs, which
// stand for them) and fake images draw from streams of their own.
Tensor augmented(const GanSpec& spec, const Replica& replica, const Tensor& images, const StepKeys& keys,
                 Purpose purpose, const ShardInput& shard) {
  return augment::augment(images, spec.augment, replica.augment_p, key_for(keys, purpose),
                          static_cast<uint64_t>(shard.first_example));
}

Tensor run_discriminator(const GanSpec& spec, nn::Module& d, const Tensor& images, const Tensor& labels) {
  return spec.num_classes > 0 && spec.auxiliary_classification_weight == 0.f ? d.forward(images, labels)
                                                                            : d.forward(images);
}

// With ACGAN the discriminator returns (n, 1 + classes): the adversarial logit, then classes.
Tensor adversarial_logits(const GanSpec& spec, const Tensor& out) {
  if (spec.auxiliary_classification_weight == 0.f) return out;
  return ops::slice(out, 1, 0, 1);
}
Tensor class_logits(const Tensor& out) { return ops::slice(out, 1, 1, out.size(1)); }

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

// Reports the update's total loss; a stand-in's (Note [empty shards]) counts zero and reports none.
Tensor finish_loss(const Tensor& loss, NetworkUpdate& u, bool stand_in) {
  if (stand_in) {
    u.losses.total = 0.f;
    for (LossComponent& c : u.losses.components) c.value = 0.f;
    u.pending_losses.clear();
    return ops::mul(loss, 0.f);
  }
  u.pending_losses.emplace_back(std::string_view(), loss.detach());
  return loss;
}

// A uniform class per example, keyed by the global example index: min(trunc((1 - u) C), C - 1),
// on the device (no host round trip; the cast to i64 truncates).
Tensor random_labels(const GanSpec& spec, int64_t n, const RngKey& key, int64_t first_example, Device device) {
  NoGradGuard no_grad;
  Tensor u = ops::rand(Shape{n}, key, static_cast<uint64_t>(first_example), device);
  const float classes = static_cast<float>(spec.num_classes);
  return ops::clamp(ops::mul(ops::rsub(u, 1.f), classes), 0.f, classes - 1.f).to(DType::I64);
}

// Note [path length batch]: path length regularisation runs on a batch of its own, global size
// path_length_batch(global batch), sharded over the replicas as the training batch is and split
// into the same number of micro-batches; its noise, labels, image noise and style mixing are
// keyed by its global example index, so 1 and R replicas (and split and un-split steps) draw
// alike. pl_mean moves by the mean path length over the whole global batch: the replicas sum
// their lengths (one all-reduce of one value) before the penalty is formed, as StyleGAN2's
// update-then-penalise order needs. With micro-batches, the first one measures every
// micro-batch's lengths without history for that sum, then each measures its own with history.
Tensor path_length_term(const GanSpec& spec, Replica& replica, const ShardInput& shard, const StepKeys& keys,
                        const distribute::ReplicaContext& ctx, MicroBatch micro) {
  const PathLengthSettings& pl = spec.path_length;
  const int64_t global = path_length_batch(shard.global_batch, pl);
  GANTRY_CHECK(micro.count == 1 || global % (ctx.num_replicas * micro.count) == 0, "loss.path_length.batch_shrink: "
               "the path length batch of ", global, " examples (global batch ", shard.global_batch, " / batch_shrink ",
               pl.batch_shrink, ") must split into ", ctx.num_replicas, " replicas x ", micro.count,
               " micro-batches (train.micro_batches)");
  const distribute::Shard s = distribute::shard_of(global, ctx.num_replicas, ctx.global_index);
  const int64_t part = s.size / micro.count;
  const Device device = replica.generator.module->get("pl_mean").device();
  nn::Module& g = *replica.generator.module;
  auto lengths_of = [&](int m, bool create_graph) {
    const int64_t first = s.begin + m * part;
    Shape noise_shape{part};
    for (int64_t d : spec.noise_shape) noise_shape.push_back(d);
    Tensor z = ops::randn(noise_shape, key_for(keys, kPathLengthNoise),
                          static_cast<uint64_t>(first * spec.noise_shape.numel()), device);
    Tensor labels;
    if (spec.num_classes > 0) labels = random_labels(spec, part, key_for(keys, kPathLengthLabels), first, device);
    g.set_rng(key_for(keys, kPathLengthG), static_cast<uint64_t>(first));
    return path_lengths(*replica.style, z, labels, key_for(keys, kPathLengthImage), static_cast<uint64_t>(first),
                        create_graph);
  };
  Tensor lengths;
  if (micro.first()) {
    float sum = 0.f;
    if (part > 0 && micro.count == 1) {
      lengths = lengths_of(0, true);
      sum = ops::sum(lengths.detach()).item();
    } else if (part > 0) {
      for (int m = 0; m < micro.count; ++m) sum += ops::sum(lengths_of(m, false)).item();
    }
    ctx.communicator->all_reduce(std::span<float>(&sum, 1), distribute::ReduceKind::Sum);
    NoGradGuard no_grad;
    const float before = g.get("pl_mean").item();
    replica.pl_mean_this_step = updated_path_length_mean(before, sum / static_cast<float>(global), pl.decay);
    g.set("pl_mean", ops::full(Shape{1}, replica.pl_mean_this_step, device));
  }
  if (part == 0) return {};
  if (!lengths.defined()) lengths = lengths_of(micro.index, true);
  return path_length_penalty(lengths, replica.pl_mean_this_step, pl, static_cast<float>(global));
}

// Note [micro-batches]: every micro-batch reports the same components in the same order; the
// last one sums them position by position (on the device, read once at apply_update), so the
// update reports the shard's losses as an un-split step does.
void sum_micro_batch_losses(NetworkUpdate& u, int count) {
  std::vector<std::pair<std::string_view, Tensor>>& pending = u.pending_losses;
  GANTRY_CHECK(pending.size() % static_cast<size_t>(count) == 0, "gan: micro-batches reported ", pending.size(),
               " loss values in all, expected the same number from each of ", count);
  const size_t per_micro = pending.size() / static_cast<size_t>(count);
  NoGradGuard no_grad;
  for (size_t m = 1; m < static_cast<size_t>(count); ++m)
    for (size_t i = 0; i < per_micro; ++i) {
      const auto& [name, value] = pending[m * per_micro + i];
      GANTRY_CHECK(name == pending[i].first, "gan: micro-batch ", m, " reported loss \"", name, "\" where micro-batch "
                   "0 reported \"", pending[i].first, "\"");
      pending[i].second = ops::add(pending[i].second, value);
    }
  pending.resize(per_micro);
}

// Ends one micro-batch of an update: the last reduces (and sums the reported losses), the
// others hold their gradients on the replica.
void finish_micro_batch(TrainedNetwork& net, const Tensor& loss, const distribute::ReplicaContext& ctx,
                        MicroBatch micro) {
  if (!micro.last()) {
    accumulate_backward(net, loss);
    return;
  }
  if (micro.count > 1) sum_micro_batch_losses(net.update, micro.count);
  backward(net, loss, ctx);
}

}  // namespace

ShardInput micro_batch_of(const ShardInput& shard, int index, int count) {
  if (count == 1 && index == 0) return shard;  // no split (an empty stand-in shard included)
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

Replica make_replica(const GanSpec& spec, const distribute::ReplicaContext& ctx, uint64_t seed) {
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
  r.generator = make_trained_network(g, spec.generator_optimizer, spec.generator_lr_schedule, spec.loss_scale, ctx);
  r.discriminator =
      make_trained_network(d, spec.discriminator_optimizer, spec.discriminator_lr_schedule, spec.loss_scale, ctx);
  r.style = dynamic_cast<StyleGenerator*>(g.get());
  GANTRY_CHECK(!spec.path_length.enabled() || r.style, "loss.path_length: needs a style-based generator (\"stylegan2\"),"
               " found one without per-layer latents; set loss.path_length.weight to 0");
  for (const auto& p : spec.penalties) r.penalty_names.push_back(p->name());
  for (TrainedNetwork* net : {&r.generator, &r.discriminator}) {
    net->loss_components.push_back("adversarial");
    if (net == &r.discriminator)
      for (const std::string& name : r.penalty_names) net->loss_components.push_back(name);
    if (spec.auxiliary_classification_weight > 0.f) net->loss_components.push_back("auxiliary_classification");
  }
  if (spec.path_length.enabled()) r.generator.loss_components.push_back("path_length");
  return r;
}

FakeBatch generate(const GanSpec& spec, Replica& replica, const ShardInput& given,
                   const StepKeys& keys, bool record_generator) {
  const bool stand_in = stands_in(spec, given);
  const ShardInput shard = stand_in ? stand_in_for(given) : given;
  FakeBatch fake;
  const int64_t n = shard.real.size(0);
  const Device device = shard.real.device();
  Shape noise_shape{n};
  for (int64_t d : spec.noise_shape) noise_shape.push_back(d);
  const int64_t per_example = spec.noise_shape.numel();
  fake.noise = ops::randn(noise_shape, key_for(keys, kNoise), shard.first_example * per_example, device);
  if (spec.num_classes > 0) fake.labels = random_labels(spec, n, key_for(keys, kFakeLabels), shard.first_example, device);
  if (n == 0) return fake;
  autograd::GradModeGuard mode(record_generator);
  StandInScope scope(replica, stand_in);
  nn::Module& g = *replica.generator.module;
  g.set_rng(key_for(keys, kDropoutG), shard.first_example);
  // Note [w average]: the forwards G's updates backpropagate through move w_avg, no others.
  if (replica.style) replica.style->set_track_w_avg(record_generator);
  fake.images = spec.num_classes > 0 ? g.forward(fake.noise, fake.labels) : g.forward(fake.noise);
  if (replica.style) replica.style->set_track_w_avg(false);
  return fake;
}

void discriminator_gradients(const GanSpec& spec, Replica& replica, const ShardInput& given, const FakeBatch& fake,
                             const StepKeys& keys, const distribute::ReplicaContext& ctx, MicroBatch micro) {
  NetworkUpdate& result = micro.first() ? start_update(replica.discriminator) : replica.discriminator.update;
  Tensor loss;
  const bool stand_in = stands_in(spec, given);
  const ShardInput shard = stand_in ? stand_in_for(given) : given;
  if (shard.real.size(0) > 0) {
    StandInScope scope(replica, stand_in);
    losses::LossContext lc = loss_context(shard, keys);
    nn::Module& d = *replica.discriminator.module;
    d.set_rng(key_for(keys, kDropoutD), shard.first_example);
    Tensor fake_images = fake.images.detach();
    Tensor real_out = run_discriminator(spec, d, augmented(spec, replica, shard.real, keys, kAugmentReal, shard),
                                        shard.labels);
    Tensor fake_out = run_discriminator(spec, d, augmented(spec, replica, fake_images, keys, kAugmentFake, shard),
                                        fake.labels);
    if (spec.augment.adaptive.enabled && !stand_in) {  // ADA's statistic: E[sign(D(real))]
      NoGradGuard no_grad;
      replica.real_sign_sum += ops::sum(ops::sign(adversarial_logits(spec, real_out))).item();
      replica.real_sign_count += static_cast<double>(shard.real.size(0));
    }
    loss = spec.loss->discriminator_loss(adversarial_logits(spec, real_out),
                                                adversarial_logits(spec, fake_out), lc);
    result.add_pending("adversarial", loss);
    // The critic captures one reference (to `critic_args`), so its std::function stores it inline.
    // It sees its input augmented as the real images were (same stream, same examples), so R1
    // differentiates D(augment(x)) with respect to the un-augmented x, as StyleGAN2-ADA does.
    struct CriticArgs {
      const GanSpec& spec;
      nn::Module& d;
      const Tensor& labels;
      const Replica& replica;
      const StepKeys& keys;
      const ShardInput& shard;
    } critic_args{spec, d, spec.num_classes > 0 ? shard.labels : kNoLabels, replica, keys, shard};
    const losses::Critic critic = [&critic_args](const Tensor& x) {
      const CriticArgs& a = critic_args;
      return adversarial_logits(
          a.spec, run_discriminator(a.spec, a.d, augmented(a.spec, a.replica, x, a.keys, kAugmentReal, a.shard),
                                    a.labels));
    };
    for (size_t p = 0; p < spec.penalties.size(); ++p) {
      Tensor term = (*spec.penalties[p])(critic, shard.real, fake_images, lc);
      result.add_pending(replica.penalty_names.at(p), term);
      if (term.defined()) loss = ops::add(loss, term);
    }
    if (spec.auxiliary_classification_weight > 0.f) {
      Tensor aux = ops::add(
          losses::auxiliary_classification_loss(class_logits(real_out), shard.labels, spec.auxiliary_classification_weight, lc),
          losses::auxiliary_classification_loss(class_logits(fake_out), fake.labels, spec.auxiliary_classification_weight, lc));
      result.add_pending("auxiliary_classification", aux);
      loss = ops::add(loss, aux);
    }
    loss = finish_loss(loss, result, stand_in);
  }
  finish_micro_batch(replica.discriminator, loss, ctx, micro);  // an empty shard (no loss) contributes zeros
}

void generator_gradients(const GanSpec& spec, Replica& replica, const ShardInput& given, const FakeBatch& fake,
                         const StepKeys& keys, const distribute::ReplicaContext& ctx, MicroBatch micro) {
  NetworkUpdate& result = micro.first() ? start_update(replica.generator) : replica.generator.update;
  Tensor loss;
  const bool stand_in = stands_in(spec, given);
  const ShardInput shard = stand_in ? stand_in_for(given) : given;
  if (shard.real.size(0) > 0) {
    StandInScope scope(replica, stand_in);
    losses::LossContext lc = loss_context(shard, keys);
    nn::Module& d = *replica.discriminator.module;
    d.set_rng(key_for(keys, kDropoutD), shard.first_example);
    Tensor fake_out =
        run_discriminator(spec, d, augmented(spec, replica, fake.images, keys, kAugmentFake, shard), fake.labels);
    Tensor real_logits;
    if (spec.loss->generator_needs_real()) {
      NoGradGuard no_grad;  // the real logits depend on D only
      real_logits = adversarial_logits(
          spec, run_discriminator(spec, d, augmented(spec, replica, shard.real, keys, kAugmentReal, shard),
                                  shard.labels));
    }
    loss = spec.loss->generator_loss(adversarial_logits(spec, fake_out), real_logits, lc);
    result.add_pending("adversarial", loss);
    if (spec.auxiliary_classification_weight > 0.f) {
      Tensor aux = losses::auxiliary_classification_loss(class_logits(fake_out), fake.labels,
                                                         spec.auxiliary_classification_weight, lc);
      result.add_pending("auxiliary_classification", aux);
      loss = ops::add(loss, aux);
    }
    loss = finish_loss(loss, result, stand_in);
  }
  if (spec.path_length.active_at(keys.step)) {  // Note [path length batch]: every replica joins
    Tensor pl = path_length_term(spec, replica, given, keys, ctx, micro);
    result.add_pending("path_length", pl);
    if (pl.defined()) {
      if (!stand_in) result.add_pending("", loss.defined() ? ops::add(loss, pl) : pl);
      loss = loss.defined() ? ops::add(loss, pl) : pl;
    }
  }
  // Only G's parameters are asked for: D's weight gradients are pruned by the engine.
  finish_micro_batch(replica.generator, loss, ctx, micro);
}

void update_latent_average(Replica& replica, const distribute::ReplicaContext& ctx) {
  if (!replica.style) return;
  replica.style->take_w_sum(replica.w_sum);
  ctx.communicator->all_reduce(replica.w_sum, distribute::ReduceKind::Sum);
  replica.style->update_w_avg(replica.w_sum);
}

EvalShard evaluate_shard(const GanSpec& spec, Replica& replica, const ShardInput& given,
                         const StepKeys& keys) {
  EvalShard out;
  // Eval mode communicates only for batch norm without running statistics (Note [empty shards]).
  const bool stand_in = stands_in(spec, given);
  const ShardInput shard = stand_in ? stand_in_for(given) : given;
  if (shard.real.size(0) == 0) return out;
  StandInScope scope(replica, stand_in);
  NoGradGuard no_grad;
  nn::Module& g = *replica.generator.module;
  nn::Module& d = *replica.discriminator.module;
  const bool g_training = g.is_training(), d_training = d.is_training();
  g.eval();
  d.eval();
  FakeBatch fake = generate(spec, replica, shard, keys, false);
  Tensor real_logits = adversarial_logits(spec, run_discriminator(spec, d, shard.real, shard.labels));
  Tensor fake_logits = adversarial_logits(spec, run_discriminator(spec, d, fake.images, fake.labels));
  losses::LossContext lc = loss_context(shard, keys);
  out.discriminator_loss = spec.loss->discriminator_loss(real_logits, fake_logits, lc).item();
  out.generator_loss = spec.loss->generator_loss(fake_logits, real_logits, lc).item();
  out.real_correct = ops::sum(ops::gt(real_logits, 0.f)).item();
  out.fake_correct = ops::sum(ops::lt(fake_logits, ops::zeros({}, fake_logits.device()))).item();
  g.train(g_training);
  d.train(d_training);
  return stand_in ? EvalShard{} : out;
}

}  // namespace gantry::gan
