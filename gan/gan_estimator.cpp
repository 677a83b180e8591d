#include "gan/gan_estimator.h"

#include <chrono>

#include "base/small_vector.h"
#include "core/autograd/grad_mode.h"
#include "distribute/sharding.h"

namespace gantry::gan {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void check_batch(const data::Batch& batch, bool conditional) {
  GANTRY_CHECK(batch.images.defined() && batch.images.dim() == 4, "gan: expected a batch of images "
               "(N, C, H, W), found ", batch.images.defined() ? batch.images.shape().str() : "none");
  GANTRY_CHECK(!conditional || batch.labels.defined(), "gan: a conditional GAN needs labels in its "
               "input, and the batch has none");
}

// The shard the input pipeline staged on this replica's device (Note [staged shards]), ready to
// be read on this thread; null when it staged none.
const data::DeviceShard* staged_shard(const data::Batch& batch, const distribute::ReplicaContext& ctx,
                                      int64_t expected_rows) {
  for (const data::DeviceShard& s : batch.on_devices) {
    if (s.local_replica != ctx.local_index) continue;
    GANTRY_CHECK(s.images.size(0) == expected_rows && s.images.device() == ctx.device, "input staging: replica ",
                 ctx.global_index, " expected its shard of ", expected_rows, " examples on ", ctx.device.str(),
                 ", found ", s.images.str());
    if (s.ready) s.ready();
    return &s;
  }
  return nullptr;
}

// This replica's shard of a global batch.
ShardInput make_shard(const data::Batch& batch, const distribute::ReplicaContext& ctx, bool conditional) {
  check_batch(batch, conditional);
  const int64_t global = batch.images.size(0);
  const distribute::Shard s = distribute::shard_of(global, ctx.num_replicas, ctx.global_index);
  ShardInput shard;
  shard.first_example = s.begin;
  shard.global_batch = global;
  if (const data::DeviceShard* staged = staged_shard(batch, ctx, s.size)) {
    shard.real = staged->images;
    shard.labels = staged->labels;
    return shard;
  }
  shard.real = ops::slice(batch.images, 0, s.begin, s.begin + s.size).to(ctx.device);
  if (batch.labels.defined())
    shard.labels = ops::slice(batch.labels, 0, s.begin, s.begin + s.size).to(ctx.device);
  return shard;
}

// Update `update`'s shard for this replica: sliced from the global batch, or the replica's own.
ShardInput make_shard(const StepInput& input, int update, const distribute::ReplicaContext& ctx, bool conditional) {
  if (input.per_replica.empty()) return make_shard(input.global.at(update), ctx, conditional);
  const data::Batch& batch = input.per_replica.at(ctx.local_index).at(update);
  check_batch(batch, conditional);
  const distribute::Shard s = distribute::shard_of(input.global_batch, ctx.num_replicas, ctx.global_index);
  GANTRY_CHECK(batch.images.size(0) == s.size, "per-replica input: replica ", ctx.global_index, " read a batch of ",
               batch.images.size(0), " examples, expected its shard of the global batch ", input.global_batch,
               " over ", ctx.num_replicas, " replicas: ", s.size);
  ShardInput shard;
  shard.first_example = s.begin;
  shard.global_batch = input.global_batch;
  if (const data::DeviceShard* staged = staged_shard(batch, ctx, s.size)) {
    shard.real = staged->images;
    shard.labels = staged->labels;
    return shard;
  }
  shard.real = batch.images.to(ctx.device);
  if (batch.labels.defined()) shard.labels = batch.labels.to(ctx.device);
  return shard;
}

// Adds `part` / `updates` to the component of its name in `parts` (made at 0 when new, as a
// map's operator[]); the sum counts as computed when any part was.
void add_to(std::vector<LossComponent>& parts, const LossComponent& part, int updates) {
  LossComponent* sum = nullptr;
  for (LossComponent& c : parts)
    if (c.name == part.name) sum = &c;
  if (sum == nullptr) sum = &parts.emplace_back(LossComponent{part.name, 0.f, false});
  sum->value += part.value / updates;
  sum->computed = sum->computed || part.computed;
}

// Writes `parts` into the map `out`, which holds the previous step's values. A component this
// step did not compute (a lazy regulariser between its steps) keeps its last computed value, so
// logs and summaries, which sample some steps only, show it; it is 0 until first computed after
// a start or resume. When `out` already holds exactly these names (every step after the first),
// only the values are assigned: no node and no key string is made.
void write_components(const std::vector<LossComponent>& parts, std::map<std::string, float>& out) {
  // parts names each component once, so equal sizes and every key found means the same names
  bool same_names = out.size() == parts.size();
  for (auto it = out.begin(); same_names && it != out.end(); ++it) {
    const LossComponent* found = nullptr;
    for (const LossComponent& c : parts)
      if (c.name == it->first) found = &c;
    if (found == nullptr)
      same_names = false;
    else if (found->computed)
      it->second = found->value;
  }
  if (same_names) return;
  out.clear();
  for (const LossComponent& c : parts) out[std::string(c.name)] = c.value;
}

// Note [micro-batches]: every replica's shard must split into equal micro-batches; checked from
// numbers every replica shares, so all of them fail together (none waits in a collective).
void check_micro_batches(int64_t global_batch, int64_t replicas, int micro) {
  GANTRY_CHECK(global_batch % replicas == 0 && (global_batch / replicas) % micro == 0,
               "train.micro_batches: expected a per-replica batch divisible by ", micro,
               " (and a global batch divisible by the ", replicas, " replicas), found a global batch of ",
               global_batch, " (", global_batch / replicas, " per replica", global_batch % replicas ? ", uneven" : "",
               ")");
}

}  // namespace

GanEstimator::GanEstimator(GanSpec spec, std::shared_ptr<distribute::Strategy> strategy, uint64_t seed)
    : spec_(std::move(spec)), strategy_(std::move(strategy)), seed_(seed), augment_p_(spec_.augment) {
  GANTRY_CHECK(spec_.generator_fn && spec_.discriminator_fn, "gan: generator and discriminator "
               "functions are required");
  GANTRY_CHECK(spec_.loss, "gan: a loss is required");
  GANTRY_CHECK(spec_.generator_optimizer && spec_.discriminator_optimizer, "gan: both optimizers "
               "are required");
  check_schedule(spec_.schedule, "gan: schedule");
  GANTRY_CHECK(spec_.micro_batches >= 1, "train.micro_batches: expected a positive count, found ",
               spec_.micro_batches);
  GANTRY_CHECK(spec_.auxiliary_classification_weight == 0.f || spec_.num_classes > 0,
               "gan: auxiliary classification needs num_classes > 0");
  replicas_.resize(strategy_->num_local_replicas());
  strategy_->run([&](const distribute::ReplicaContext& ctx) {
    replicas_[ctx.local_index] = make_replica(spec_, ctx, seed_);
  });
  const GeneratorEma& e = spec_.generator_ema;
  if (e.enabled)
    ema_ = e.decay ? nn::Ema::with_decay(*replicas_[0].generator.module, *e.decay)
                   : nn::Ema::with_half_life(*replicas_[0].generator.module, e.half_life_kimg, e.rampup);
}

void GanEstimator::run_step(const StepInput& input, StepResults& r) {
  const TrainSchedule& sched = spec_.schedule;
  totals_.resize(replicas_.size());
  const bool conditional = spec_.num_classes > 0;
  strategy_->run([&](const distribute::ReplicaContext& ctx) {
    auto t0 = Clock::now();
    Replica& replica = replicas_[ctx.local_index];
    ReplicaTotals& tot = totals_[ctx.local_index];
    tot.d_loss = tot.g_loss = 0;
    tot.d_components.clear();  // the lists keep their capacity
    tot.g_components.clear();
    tot.all_reduce = tot.update = tot.wall = 0;
    tot.skipped = 0;
    replica.augment_p = augment_p_.p();  // read by every replica, written only between steps
    replica.real_sign_sum = replica.real_sign_count = 0;
    schedule_learning_rate(replica.generator, global_step_);
    schedule_learning_rate(replica.discriminator, global_step_);
    StepKeys keys{seed_, global_step_, 0};
    FakeBatch last_fake;
    ShardInput shard;
    // Adds one update's losses (averaged over the updates of its kind) and times to the totals.
    auto add = [&tot](const TrainedNetwork& net, int updates, float& loss, std::vector<LossComponent>& parts) {
      const UpdateLosses& losses = net.update.losses;
      loss += losses.total / updates;
      for (const LossComponent& c : losses.components) add_to(parts, c, updates);
      tot.skipped += losses.skipped;
      tot.all_reduce += losses.all_reduce_seconds;
      tot.update += losses.update_seconds;
    };
    // Note [micro-batches]: each update runs over `micro` micro-batches (1: the whole shard).
    const int micro = spec_.micro_batches;
    if (micro > 1) check_micro_batches(input.global_batch, ctx.num_replicas, micro);
    if (sched.joint) {  // both gradients at the same weights, then both updates
      shard = make_shard(input, 0, ctx, conditional);
      for (int m = 0; m < micro; ++m) {
        const ShardInput part = micro_batch_of(shard, m, micro);
        FakeBatch fake = generate(spec_, replica, part, keys, true);
        discriminator_gradients(spec_, replica, part, fake, keys, ctx, {m, micro});
        generator_gradients(spec_, replica, part, fake, keys, ctx, {m, micro});
      }
      apply_update(replica.discriminator);
      apply_update(replica.generator);
      update_latent_average(replica, ctx);  // Note [w average]
      add(replica.discriminator, 1, tot.d_loss, tot.d_components);
      add(replica.generator, 1, tot.g_loss, tot.g_components);
    }
    for (int d = 0; d < (sched.joint ? 0 : sched.discriminator_steps); ++d) {
      keys.substep = d;
      shard = make_shard(input, d, ctx, conditional);
      // The last D update's fakes, with G's graph, serve the first G update (reuse_fake). With
      // micro-batches G runs again instead, from the same keys (the same noise), per micro-batch.
      const bool keep_for_g =
          micro == 1 && sched.reuse_fake && d == sched.discriminator_steps - 1 && sched.generator_steps > 0;
      for (int m = 0; m < micro; ++m) {
        const ShardInput part = micro_batch_of(shard, m, micro);
        last_fake = generate(spec_, replica, part, keys, /*record_generator=*/keep_for_g);
        discriminator_gradients(spec_, replica, part, last_fake, keys, ctx, {m, micro});
      }
      apply_update(replica.discriminator);
      add(replica.discriminator, sched.discriminator_steps, tot.d_loss, tot.d_components);
    }
    for (int g = 0; g < (sched.joint ? 0 : sched.generator_steps); ++g) {
      keys.substep = sched.discriminator_steps + g;
      if (sched.discriminator_steps == 0) shard = make_shard(input, 0, ctx, conditional);
      const bool reuse = g == 0 && sched.reuse_fake && sched.discriminator_steps > 0;
      StepKeys noise_keys = keys;
      if (reuse) noise_keys.substep = sched.discriminator_steps - 1;
      for (int m = 0; m < micro; ++m) {
        const ShardInput part = micro_batch_of(shard, m, micro);
        FakeBatch fake = reuse && last_fake.images.defined() && last_fake.images.requires_grad()
                             ? last_fake
                             : generate(spec_, replica, part, noise_keys, true);
        generator_gradients(spec_, replica, part, fake, keys, ctx, {m, micro});
      }
      apply_update(replica.generator);
      update_latent_average(replica, ctx);  // Note [w average]
      add(replica.generator, sched.generator_steps, tot.g_loss, tot.g_components);
    }
    // Losses are per-replica shares of the global mean: sum them over replicas (and workers).
    std::vector<float>& reduced = tot.reduced;  // keeps its capacity
    reduced.clear();
    reduced.push_back(tot.d_loss);
    reduced.push_back(tot.g_loss);
    for (const LossComponent& c : tot.d_components) reduced.push_back(c.value);
    for (const LossComponent& c : tot.g_components) reduced.push_back(c.value);
    // how many replicas computed each component (a stand-in for an empty shard computes none)
    for (const LossComponent& c : tot.d_components) reduced.push_back(c.computed ? 1.f : 0.f);
    for (const LossComponent& c : tot.g_components) reduced.push_back(c.computed ? 1.f : 0.f);
    const bool adaptive = spec_.augment.adaptive.enabled;
    if (adaptive) {  // sums of signs are integers: exact in f32 below 2^24 examples per step
      reduced.push_back(static_cast<float>(replica.real_sign_sum));
      reduced.push_back(static_cast<float>(replica.real_sign_count));
    }
    ctx.communicator->all_reduce(reduced, distribute::ReduceKind::Sum);
    size_t i = 0;
    tot.d_loss = reduced[i++];
    tot.g_loss = reduced[i++];
    for (LossComponent& c : tot.d_components) c.value = reduced[i++];
    for (LossComponent& c : tot.g_components) c.value = reduced[i++];
    for (LossComponent& c : tot.d_components) c.computed = reduced[i++] > 0.f;
    for (LossComponent& c : tot.g_components) c.computed = reduced[i++] > 0.f;
    tot.real_sign_sum = adaptive ? reduced[i++] : 0.0;
    tot.real_sign_count = adaptive ? reduced[i++] : 0.0;
    tot.wall = seconds_since(t0);
  });

  const ReplicaTotals& first = totals_[0];
  r.step = 0;
  r.discriminator_loss = first.d_loss;
  r.generator_loss = first.g_loss;
  write_components(first.d_components, r.discriminator_components);
  write_components(first.g_components, r.generator_components);
  r.discriminator_updates = sched.discriminator_steps;
  r.generator_updates = sched.generator_steps;
  r.skipped_updates = first.skipped;
  r.global_batch = input.global_batch;
  // Every replica (and worker) sees the same sums, so p moves identically everywhere.
  augment_p_.add_step(first.real_sign_sum, first.real_sign_count, sched.joint ? 1 : sched.discriminator_steps,
                      input.global_batch);
  r.augment = spec_.augment.enabled();
  r.augment_p = augment_p_.p();
  r.augment_real_sign = augment_p_.state().last_real_sign;
  r.images_per_second = 0;
  r.time = TimeBreakdown{};
  // Replicas run in parallel: the slowest one sets the pace.
  for (const ReplicaTotals& t : totals_) {
    if (t.wall >= r.time.compute + r.time.all_reduce + r.time.update) {
      r.time.all_reduce = t.all_reduce;
      r.time.update = t.update;
      r.time.compute = t.wall - t.all_reduce - t.update;
    }
  }
}

bool GanEstimator::any_worker_requested_stop() {
  if (strategy_->num_replicas_in_sync() == strategy_->num_local_replicas()) return stop_requested_;
  // Hooks that stop the run (NaN guard, stop-at-step) run on the chief: every worker must stop
  // after the same step, or the others would wait for it in the next step's collectives.
  float stop = stop_requested_ ? 1.f : 0.f;
  strategy_->run([&](const distribute::ReplicaContext& ctx) {
    float mine = stop;
    ctx.communicator->all_reduce(std::span<float>(&mine, 1), distribute::ReduceKind::Max);
    if (ctx.local_index == 0) stop = mine;
  });
  return stop > 0.f;
}

void GanEstimator::train(const BatchSource& input, int64_t max_steps,
                         const std::vector<std::shared_ptr<Hook>>& hooks) {
  train_loop(
      [&](int updates, StepInput& in) {
        for (int i = 0; i < updates; ++i) in.global.push_back(input());
        in.global_batch = in.global[0].images.defined() ? in.global[0].images.size(0) : 0;
      },
      max_steps, hooks);
}

void GanEstimator::train(const PerReplicaInput& input, int64_t max_steps,
                         const std::vector<std::shared_ptr<Hook>>& hooks) {
  GANTRY_CHECK(input.next && input.global_batch > 0, "per-replica input: expected a reader and a positive global "
               "batch size, found ", input.global_batch);
  train_loop(
      [&](int updates, StepInput& in) {
        in.global_batch = input.global_batch;
        in.per_replica.resize(replicas_.size());
        // Each replica reads on its own thread, so the pipelines' hand-off runs in parallel.
        strategy_->run([&](const distribute::ReplicaContext& ctx) {
          for (int i = 0; i < updates; ++i) in.per_replica[ctx.local_index].push_back(input.next(ctx));
        });
      },
      max_steps, hooks);
}

namespace {

// Empties a step's input: drops its batches (the lists keep their capacity).
void clear_step_input(StepInput& in) {
  in.global.clear();
  for (std::vector<data::Batch>& batches : in.per_replica) batches.clear();
  in.global_batch = 0;
}

}  // namespace

void GanEstimator::train_loop(FunctionRef<void(int updates, StepInput& input)> draw, int64_t max_steps,
                              const std::vector<std::shared_ptr<Hook>>& all_hooks) {
  SmallVector<Hook*, 8> hooks;  // the ones this worker runs (all_hooks owns them)
  for (const auto& h : all_hooks)
    if (strategy_->is_chief() || h->runs_on_every_worker()) hooks.push_back(h.get());
  stop_requested_ = false;
  for (auto& h : hooks) h->begin(*this);
  const int batches_per_step = std::max(1, spec_.schedule.discriminator_steps);
  while (global_step_ < max_steps && !stop_requested_) {
    for (auto& h : hooks) h->before_step(*this, global_step_);
    auto t0 = Clock::now();
    StepInput& step_input = step_input_;
    clear_step_input(step_input);
    draw(batches_per_step, step_input);
    double input_wait = seconds_since(t0);
    StepResults& r = step_results_;
    run_step(step_input, r);
    ++global_step_;
    if (ema_) ema_->update(*replicas_[0].generator.module, r.global_batch, global_step_ * r.global_batch);
    r.step = global_step_;
    r.time.input_wait = input_wait;
    r.time.total = seconds_since(t0);
    const int64_t examples = step_input.global_batch * batches_per_step;
    r.images_per_second = r.time.total > 0 ? examples / r.time.total : 0;
    for (auto& h : hooks) h->after_step(*this, r);
    clear_step_input(step_input);  // the batches are not kept past their step
    stop_requested_ = any_worker_requested_stop();
  }
  for (auto& h : hooks) h->end(*this);
}

Tensor GanEstimator::predict(const Tensor& noise, const Tensor& labels, bool use_ema) {
  GANTRY_CHECK(!use_ema || ema_, "predict: this estimator has no EMA generator");
  nn::Module& g = use_ema ? ema_->module() : *replicas_.at(0).generator.module;
  GANTRY_CHECK(spec_.num_classes == 0 || labels.defined(), "predict: a conditional generator needs labels");
  NoGradGuard no_grad;
  bool was_training = g.is_training();
  g.eval();
  Tensor z = noise.to(g.device());
  Tensor out = spec_.num_classes > 0 ? g.forward(z, labels.to(z.device())) : g.forward(z);
  g.train(was_training);
  return out;
}

EvalResults GanEstimator::evaluate(const BatchSource& input, int64_t steps) {
  EvalResults total;
  const bool conditional = spec_.num_classes > 0;
  for (int64_t s = 0; s < steps; ++s) {
    data::Batch batch = input();
    std::vector<EvalShard> shards(replicas_.size());
    strategy_->run([&](const distribute::ReplicaContext& ctx) {
      // evaluation noise: its own stream (substep -1), independent of training
      StepKeys keys{seed_, s, -1};
      EvalShard e = evaluate_shard(spec_, replicas_[ctx.local_index], make_shard(batch, ctx, conditional), keys);
      std::vector<float> v{e.discriminator_loss, e.generator_loss, e.real_correct, e.fake_correct};
      ctx.communicator->all_reduce(v, distribute::ReduceKind::Sum);
      shards[ctx.local_index] = {v[0], v[1], v[2], v[3]};
    });
    const int64_t n = batch.images.size(0);
    total.discriminator_loss += shards[0].discriminator_loss;
    total.generator_loss += shards[0].generator_loss;
    total.real_accuracy += shards[0].real_correct;
    total.fake_accuracy += shards[0].fake_correct;
    total.examples += n;
    ++total.steps;
  }
  if (total.steps > 0) {
    total.discriminator_loss /= static_cast<float>(total.steps);
    total.generator_loss /= static_cast<float>(total.steps);
  }
  if (total.examples > 0) {
    total.real_accuracy /= static_cast<float>(total.examples);
    total.fake_accuracy /= static_cast<float>(total.examples);
  }
  return total;
}

}  // namespace gantry::gan
