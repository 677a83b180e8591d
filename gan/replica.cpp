#include "gan/replica.h"

#include <chrono>

#include "backend/backend.h"
#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "distribute/all_reduce_op.h"
#include "losses/loss_context.h"
#include "nn/batch_norm.h"

namespace gantry::gan {

namespace {

const Tensor kNoLabels;  // an undefined tensor, for a critic without labels

enum Purpose : uint64_t { kInit = 1, kNoise = 2, kFakeLabels = 3, kPenalty = 4, kDropoutD = 5, kDropoutG = 6 };

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

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Note [gradient overlap]: inside Strategy::run the buckets of `reducer` are started during
// backward, as soon as their gradients are final; `g.reducing` then says apply_gradients has
// only to wait for them. The gradients go into g.grads, whose capacity is kept (grad_into).
void gradients_with_overlap(const Tensor& loss, const std::vector<Tensor>& params,
                            distribute::GradientReducer& reducer, Gradients& g) {
  const distribute::ReplicaContext* ctx = distribute::current_replica();
  if (ctx == nullptr) {
    autograd::grad_into(g.grads, {loss}, params, {}, false, false, /*allow_unused=*/true);
    return;
  }
  reducer.begin(*ctx->communicator);
  g.reducing = &reducer;
  autograd::grad_into(g.grads, {loss}, params, {}, false, false, /*allow_unused=*/true,
                      [&reducer](size_t i, const Tensor& grad) { reducer.mark_ready(i, grad); });
}

// A replica with nothing to backpropagate (empty shard) still starts every bucket, with zeros.
void finish_backward(distribute::GradientReducer& reducer, Gradients& g) {
  const distribute::ReplicaContext* ctx = distribute::current_replica();
  if (ctx == nullptr) return;
  if (g.reducing == nullptr) {
    reducer.begin(*ctx->communicator);
    g.reducing = &reducer;
  }
  reducer.finish_backward();
}

// Divides the all-reduced gradients by the loss scale, in place (exact: the scale is a power of
// two, gan/loss_scaler.h).
void unscale(const std::vector<Tensor>& grads, const LossScaler& scaler) {
  if (!scaler.enabled()) return;
  const UnaryFn by_inverse{UnaryOp::MulScalar, 1.f / scaler.scale(), 0.f};
  for (const Tensor& g : grads) {
    backend_for(g.device()).unary(by_inverse, g.view(), g.view());
    g.bump_version();
  }
}

// Reads the update's loss values (Gradients::pending_losses) into its losses.
void read_losses(Gradients& g) {
  for (const auto& [name, value] : g.pending_losses) {
    if (name.empty()) {
      g.losses.total = value.item();
    } else if (LossComponent* c = g.losses.find(name)) {
      c->value = value.item();
    } else {
      g.losses.components.push_back({name, value.item()});
    }
  }
  g.pending_losses.clear();  // keeps its capacity
}

// Sums the replicas' gradients (each already divided by the global batch), sets them as the
// parameters' .grad and applies the optimizer.
void apply_gradients(const std::vector<Tensor>& params, Gradients& g, distribute::GradientReducer& reducer,
                     nn::Optimizer& opt, LossScaler& scaler, const distribute::ReplicaContext& ctx) {
  UpdateLosses& out = g.losses;
  if (g.reducing == nullptr) {  // computed outside Strategy::run: no overlap
    reducer.begin(*ctx.communicator);
    for (size_t i = 0; i < g.grads.size(); ++i)
      if (g.grads[i].defined()) reducer.mark_ready(i, g.grads[i]);
    reducer.finish_backward();
  }
  GANTRY_CHECK(g.reducing == nullptr || g.reducing == &reducer, "gan: gradients were reduced by another "
               "network's buckets");
  // Note [non-finite updates]: an update whose all-reduced gradients hold NaN/Inf is not applied.
  // Every replica sees the same reduced values, so all skip together and stay identical.
  const bool finite = reducer.wait_and_unpack(g.grads);
  g.reducing = nullptr;
  read_losses(g);
  out.all_reduce_seconds += reducer.communication_seconds();
  if (!finite) {
    scaler.update(false);  // Note [dynamic loss scale]: the next update retries with half the scale
    ++out.skipped;
    return;
  }
  auto t0 = std::chrono::steady_clock::now();
  unscale(g.grads, scaler);
  scaler.update(true);
  for (size_t i = 0; i < params.size(); ++i) params[i].set_grad(g.grads[i]);
  opt.step();
  out.update_seconds += seconds_since(t0);
}

void add_component(Gradients& g, std::string_view name, const Tensor& value) {
  if (value.defined()) g.pending_losses.emplace_back(name, value.detach());
}

// Note [loss components]: every replica reports the same component names in the same order
// (zero when a term is inactive or the shard is empty), so the loss all-reduce lines up across
// ranks. A name given twice is one component (the last value read wins), as in a map.
void set_component(UpdateLosses& out, std::string_view name) {
  if (out.find(name) == nullptr) out.components.push_back({name, 0.f});
}

// Resets `out` to the update's components, all zero, keeping the list's capacity.
void empty_losses(const GanSpec& spec, const Replica& replica, bool discriminator, UpdateLosses& out) {
  out.total = 0.f;
  out.components.clear();
  out.all_reduce_seconds = 0;
  out.update_seconds = 0;
  out.skipped = 0;
  set_component(out, "adversarial");
  if (discriminator)
    for (const std::string& name : replica.penalty_names) set_component(out, name);
  if (spec.auxiliary_classification_weight > 0.f) set_component(out, "auxiliary_classification");
}

// Starts a network's update in its reused state (Note [reused update state]): losses reset,
// one undefined gradient per parameter, nothing pending.
Gradients& start_update(const GanSpec& spec, Replica& replica, bool discriminator) {
  Gradients& g = discriminator ? replica.discriminator_update : replica.generator_update;
  empty_losses(spec, replica, discriminator, g.losses);
  const size_t params = (discriminator ? replica.discriminator_params : replica.generator_params).size();
  g.grads.resize(params);
  for (Tensor& t : g.grads) t = Tensor();
  g.reducing = nullptr;
  g.pending_losses.clear();
  return g;
}

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
Tensor finish_loss(const Tensor& loss, Gradients& g, bool stand_in) {
  if (stand_in) {
    g.losses.total = 0.f;
    for (LossComponent& c : g.losses.components) c.value = 0.f;
    g.pending_losses.clear();
    return ops::mul(loss, 0.f);
  }
  g.pending_losses.emplace_back(std::string_view(), loss.detach());
  return loss;
}

// The loss backward starts from: multiplied by the network's loss scale when scaling is on.
Tensor scaled(const Tensor& loss, const LossScaler& scaler) {
  return scaler.enabled() ? ops::mul(loss, scaler.scale()) : loss;
}

}  // namespace

const LossComponent* UpdateLosses::find(std::string_view name) const {
  for (const LossComponent& c : components)
    if (c.name == name) return &c;
  return nullptr;
}

LossComponent* UpdateLosses::find(std::string_view name) {
  return const_cast<LossComponent*>(std::as_const(*this).find(name));
}

Replica make_replica(const GanSpec& spec, const distribute::ReplicaContext& ctx, uint64_t seed) {
  Replica r;
  r.generator = spec.generator_fn(ctx.device, RngKey{seed, stream_id(kInit, 0)});
  r.discriminator = spec.discriminator_fn(ctx.device, RngKey{seed, stream_id(kInit, 1)});
  GANTRY_CHECK(r.generator && r.discriminator, "gan: the generator and discriminator functions "
               "must return a module");
  r.generator->to(ctx.device);
  r.discriminator->to(ctx.device);
  if (spec.sync_batch_norm) {
    synchronize_batch_norm(*r.generator, r.standing_in);
    synchronize_batch_norm(*r.discriminator, r.standing_in);
  }
  // Variables start identical everywhere: replica 0's values win (Note [bucket order]).
  {
    NoGradGuard no_grad;
    std::vector<Tensor> state;
    for (auto& [name, t] : r.generator->state_dict()) if (t.dtype() == DType::F32) state.push_back(t);
    for (auto& [name, t] : r.discriminator->state_dict()) if (t.dtype() == DType::F32) state.push_back(t);
    ctx.broadcast_from_first(state);
  }
  r.generator_params = r.generator->parameters();
  r.discriminator_params = r.discriminator->parameters();
  r.generator_reducer = std::make_unique<distribute::GradientReducer>(r.generator_params, ctx.device,
                                                                      ctx.gradient_bucket_bytes);
  r.discriminator_reducer = std::make_unique<distribute::GradientReducer>(r.discriminator_params, ctx.device,
                                                                          ctx.gradient_bucket_bytes);
  r.generator_optimizer = spec.generator_optimizer(r.generator_params);
  r.discriminator_optimizer = spec.discriminator_optimizer(r.discriminator_params);
  r.generator_scaler = LossScaler(spec.loss_scale);
  r.discriminator_scaler = LossScaler(spec.loss_scale);
  for (const auto& p : spec.penalties) r.penalty_names.push_back(p->name());
  r.generator_base_lr = r.generator_optimizer->lr();
  r.discriminator_base_lr = r.discriminator_optimizer->lr();
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
  if (spec.num_classes > 0) {
    // uniform class per example, keyed by the global example index: min(trunc((1 - u) C), C - 1),
    // on the device (no host round trip; the cast to i64 truncates)
    NoGradGuard no_grad;
    Tensor u = ops::rand(Shape{n}, key_for(keys, kFakeLabels), shard.first_example, device);
    const float classes = static_cast<float>(spec.num_classes);
    fake.labels = ops::clamp(ops::mul(ops::rsub(u, 1.f), classes), 0.f, classes - 1.f).to(DType::I64);
  }
  if (n == 0) return fake;
  autograd::GradModeGuard mode(record_generator);
  StandInScope scope(replica, stand_in);
  replica.generator->set_rng(key_for(keys, kDropoutG), shard.first_example);
  fake.images = spec.num_classes > 0 ? replica.generator->forward(fake.noise, fake.labels)
                                     : replica.generator->forward(fake.noise);
  return fake;
}

Gradients& discriminator_gradients(const GanSpec& spec, Replica& replica, const ShardInput& given,
                                   const FakeBatch& fake, const StepKeys& keys) {
  Gradients& result = start_update(spec, replica, /*discriminator=*/true);
  const bool stand_in = stands_in(spec, given);
  const ShardInput shard = stand_in ? stand_in_for(given) : given;
  if (shard.real.size(0) > 0) {
    StandInScope scope(replica, stand_in);
    losses::LossContext lc = loss_context(shard, keys);
    nn::Module& d = *replica.discriminator;
    d.set_rng(key_for(keys, kDropoutD), shard.first_example);
    Tensor fake_images = fake.images.detach();
    Tensor real_out = run_discriminator(spec, d, shard.real, shard.labels);
    Tensor fake_out = run_discriminator(spec, d, fake_images, fake.labels);
    Tensor loss = spec.loss->discriminator_loss(adversarial_logits(spec, real_out),
                                                adversarial_logits(spec, fake_out), lc);
    add_component(result, "adversarial", loss);
    // The critic captures one reference (to `critic_args`), so its std::function stores it inline.
    struct CriticArgs {
      const GanSpec& spec;
      nn::Module& d;
      const Tensor& labels;
    } critic_args{spec, d, spec.num_classes > 0 ? shard.labels : kNoLabels};
    const losses::Critic critic = [&critic_args](const Tensor& x) {
      return adversarial_logits(critic_args.spec,
                                run_discriminator(critic_args.spec, critic_args.d, x, critic_args.labels));
    };
    for (size_t p = 0; p < spec.penalties.size(); ++p) {
      Tensor term = (*spec.penalties[p])(critic, shard.real, fake_images, lc);
      add_component(result, replica.penalty_names.at(p), term);
      if (term.defined()) loss = ops::add(loss, term);
    }
    if (spec.auxiliary_classification_weight > 0.f) {
      Tensor aux = ops::add(
          losses::auxiliary_classification_loss(class_logits(real_out), shard.labels, spec.auxiliary_classification_weight, lc),
          losses::auxiliary_classification_loss(class_logits(fake_out), fake.labels, spec.auxiliary_classification_weight, lc));
      add_component(result, "auxiliary_classification", aux);
      loss = ops::add(loss, aux);
    }
    loss = scaled(finish_loss(loss, result, stand_in), replica.discriminator_scaler);
    gradients_with_overlap(loss, replica.discriminator_params, *replica.discriminator_reducer, result);
  }
  finish_backward(*replica.discriminator_reducer, result);
  return result;
}

void apply_discriminator(Replica& replica, Gradients& g, const distribute::ReplicaContext& ctx) {
  apply_gradients(replica.discriminator_params, g, *replica.discriminator_reducer, *replica.discriminator_optimizer,
                  replica.discriminator_scaler, ctx);
}

Gradients& generator_gradients(const GanSpec& spec, Replica& replica, const ShardInput& given,
                               const FakeBatch& fake, const StepKeys& keys) {
  Gradients& result = start_update(spec, replica, /*discriminator=*/false);
  const bool stand_in = stands_in(spec, given);
  const ShardInput shard = stand_in ? stand_in_for(given) : given;
  if (shard.real.size(0) > 0) {
    StandInScope scope(replica, stand_in);
    losses::LossContext lc = loss_context(shard, keys);
    nn::Module& d = *replica.discriminator;
    d.set_rng(key_for(keys, kDropoutD), shard.first_example);
    Tensor fake_out = run_discriminator(spec, d, fake.images, fake.labels);
    Tensor real_logits;
    if (spec.loss->generator_needs_real()) {
      NoGradGuard no_grad;  // the real logits depend on D only
      real_logits = adversarial_logits(spec, run_discriminator(spec, d, shard.real, shard.labels));
    }
    Tensor loss = spec.loss->generator_loss(adversarial_logits(spec, fake_out), real_logits, lc);
    add_component(result, "adversarial", loss);
    if (spec.auxiliary_classification_weight > 0.f) {
      Tensor aux = losses::auxiliary_classification_loss(class_logits(fake_out), fake.labels,
                                                         spec.auxiliary_classification_weight, lc);
      add_component(result, "auxiliary_classification", aux);
      loss = ops::add(loss, aux);
    }
    loss = scaled(finish_loss(loss, result, stand_in), replica.generator_scaler);
    // Only G's parameters are asked for: D's weight gradients are pruned by the engine.
    gradients_with_overlap(loss, replica.generator_params, *replica.generator_reducer, result);
  }
  finish_backward(*replica.generator_reducer, result);
  return result;
}

void apply_generator(Replica& replica, Gradients& g, const distribute::ReplicaContext& ctx) {
  apply_gradients(replica.generator_params, g, *replica.generator_reducer, *replica.generator_optimizer,
                  replica.generator_scaler, ctx);
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
  nn::Module& g = *replica.generator;
  nn::Module& d = *replica.discriminator;
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
