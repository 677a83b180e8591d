#include "gan/estimator/gan_estimator.h"

#include <chrono>

#include "base/small_vector.h"
#include "core/autograd/grad_mode.h"
#include "core/ops/ops.h"
#include "distribute/sharding.h"
#include "gan/objective/objective.h"
#include "gan/objective/real_sign_statistic.h"
#include "gan/step/network_calls.h"

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

// This replica's shard of a global batch of `global` examples.
ShardInput make_shard(const data::Batch& batch, int64_t global, const distribute::ReplicaContext& ctx,
                      bool conditional) {
  check_batch(batch, conditional);
  GANTRY_CHECK(batch.images.size(0) == global, "gan: a global batch of ", batch.images.size(0),
               " examples, expected ", global, " (every global batch of a step has the same size)");
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
  if (input.per_replica.empty()) return make_shard(input.global.at(update), input.global_batch, ctx, conditional);
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

// Every replica's shard must split into equal micro-batches (Note [micro-batches] in
// gan/step/replica.h); checked from numbers every replica shares, so all of them fail together (none
// waits in a collective).
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
  GANTRY_CHECK(spec_.generator_optimizer && spec_.discriminator_optimizer, "gan: both optimizers "
               "are required");
  check_schedule(spec_.schedule, "gan: schedule");
  GANTRY_CHECK(spec_.micro_batches >= 1, "train.micro_batches: expected a positive count, found ",
               spec_.micro_batches);
  GANTRY_CHECK(!spec_.auxiliary_classifier || spec_.num_classes > 0,
               "gan: auxiliary classification needs num_classes > 0");
  phases_ = phases_for(spec_.schedule, spec_.micro_batches);
  objective_ = objective_of(spec_);
  const int updates[2] = {updates_of(phases_, Network::Discriminator), updates_of(phases_, Network::Generator)};
  replicas_.resize(strategy_->num_local_replicas());
  strategy_->run([&](const distribute::ReplicaContext& ctx) {
    replicas_[ctx.local_index] = make_replica(spec_, objective_, updates, ctx, seed_);
  });
  real_sign_ = replicas_[0].stats.find(kRealSignStatistic);
  GANTRY_CHECK(!spec_.augment.adaptive.enabled || real_sign_ >= 0, "gan: adaptive augmentation moves p by ADA's "
               "statistic, expected its term among spec.terms (make_real_sign_statistic(); the run config adds it "
               "with augment.adaptive), found none");
  const GeneratorEma& e = spec_.generator_ema;
  if (e.enabled)
    ema_ = e.decay ? nn::Ema::with_decay(*replicas_[0].generator.module, *e.decay)
                   : nn::Ema::with_half_life(*replicas_[0].generator.module, e.half_life_kimg.at(0), e.rampup);
}

void GanEstimator::run_step(const StepInput& input, int64_t images_seen, StepResults& r) {
  totals_.resize(replicas_.size());
  const bool conditional = spec_.num_classes > 0;
  augment_p_.follow_schedule(images_seen);
  strategy_->run([&](const distribute::ReplicaContext& ctx) {
    auto t0 = Clock::now();
    Replica& replica = replicas_[ctx.local_index];
    ReplicaTotals& tot = totals_[ctx.local_index];
    tot = ReplicaTotals{};
    replica.augment_p = augment_p_.p();  // read by every replica, written only between steps
    replica.stats.begin_step(ctx.device);
    schedule_hyperparameters(replica.generator, global_step_, images_seen);
    schedule_hyperparameters(replica.discriminator, global_step_, images_seen);
    if (spec_.micro_batches > 1) check_micro_batches(input.global_batch, ctx.num_replicas, spec_.micro_batches);
    StepKeys keys{seed_, global_step_, 0, images_seen};
    FakeBatch last_fake;  // the previous update's fakes, kept when the next phase reuses them
    ShardInput shard;
    int shard_batch = -1;  // the input batch `shard` was made from
    for (size_t p = 0; p < phases_.size(); ++p) {  // Note [phases]
      const Phase& phase = phases_[p];
      const bool next_reuses = p + 1 < phases_.size() && phases_[p + 1].reuses_previous_fake;
      const int micro = phase.micro_batches;
      for (int u = 0; u < phase.updates; ++u) {
        keys.substep = phase.first_substep + u;
        if (phase.batch_of(u) != shard_batch) {
          shard_batch = phase.batch_of(u);
          shard = make_shard(input, shard_batch, ctx, conditional);
        }
        const bool reuse = u == 0 && phase.reuses_previous_fake;
        StepKeys noise_keys = keys;  // a reused batch's noise is the previous update's
        if (reuse) noise_keys.substep = phases_[p - 1].first_substep + phases_[p - 1].updates - 1;
        // The last update's fakes, with G's graph, serve the next phase; with micro-batches G runs
        // again there instead, from the same keys (the same noise), per micro-batch.
        const bool keep_fake = next_reuses && u == phase.updates - 1 && micro == 1;
        const bool record_generator = phase.updates_generator() || keep_fake;
        for (int m = 0; m < micro; ++m) {
          MicroBatch part = micro_batch(spec_, shard, m, micro);
          part.fake = reuse && last_fake.images.defined() && last_fake.images.requires_grad()
                          ? last_fake
                          : generate(spec_, replica, part, noise_keys, record_generator);
          for (const Network n : phase.networks) network_gradients(spec_, replica, n, part, keys, ctx);
          last_fake = keep_fake ? std::move(part.fake) : FakeBatch{};
        }
        for (const Network n : phase.networks) {
          TrainedNetwork& net = replica.network(n);  // either one: Note [one update path]
          apply_update(net);
          if (n == Network::Generator) update_latent_average(replica, ctx);  // Note [w average]
          tot.skipped += net.update.skipped;
          tot.overflowed += net.update.overflowed;
          tot.all_reduce += net.update.all_reduce_seconds;
          tot.update += net.update.update_seconds;
        }
      }
    }
    replica.stats.reduce(ctx);  // the step's one all-reduce of its statistics: Note [stats reporter]
    tot.wall = seconds_since(t0);
  });

  const StatsReporter& stats = replicas_[0].stats;  // every replica (and worker) holds the same sums
  write_statistics(stats, images_seen, r);
  r.step = 0;
  r.discriminator_updates = spec_.schedule.discriminator_steps;
  r.generator_updates = spec_.schedule.generator_steps;
  r.skipped_updates = totals_[0].skipped;
  r.loss_scale_overflows = totals_[0].overflowed;
  r.global_batch = input.global_batch;
  // The same sums everywhere, so p moves identically everywhere.
  const bool sign = real_sign_ >= 0;
  augment_p_.add_step(sign ? stats.sum(real_sign_) : 0.0, sign ? stats.count(real_sign_) : 0.0,
                      updates_of(phases_, Network::Discriminator), input.global_batch);
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

void GanEstimator::write_statistics(const StatsReporter& stats, int64_t images_seen, StepResults& r) {
  const std::vector<StatDeclaration>& declared = stats.declarations();
  const std::vector<nn::NamedSchedule>& schedules = spec_.logged_schedules;
  const bool first = statistics_for_ != &r || statistic_slots_.size() != declared.size() + schedules.size();
  if (first) {  // make the entries (and forget what an earlier run left in r)
    statistics_for_ = &r;
    statistic_slots_.clear();
    r.discriminator_components.clear();
    r.generator_components.clear();
    r.statistics.clear();
    for (const StatDeclaration& d : declared) {
      const std::string& name = d.name;
      float* slot = name == "D"                 ? &r.discriminator_loss
                    : name == "G"               ? &r.generator_loss
                    : name.starts_with("D/")    ? &r.discriminator_components[name.substr(2)]
                    : name.starts_with("G/")    ? &r.generator_components[name.substr(2)]
                                                : &r.statistics[name];
      statistic_slots_.push_back(slot);
    }
    for (const nn::NamedSchedule& s : schedules) statistic_slots_.push_back(&r.statistics["schedule/" + s.path]);
  }
  for (size_t i = 0; i < declared.size(); ++i)
    if (first || stats.reported(static_cast<int>(i))) *statistic_slots_[i] = stats.value(static_cast<int>(i));
  // The values this step took (Note [logged schedules])
  for (size_t i = 0; i < schedules.size(); ++i)
    *statistic_slots_[declared.size() + i] = static_cast<float>(schedules[i].schedule.at(images_seen));
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
  const int batches_per_step = input_batches(phases_);
  while (global_step_ < max_steps && !stop_requested_) {
    for (auto& h : hooks) h->before_step(*this, global_step_);
    auto t0 = Clock::now();
    StepInput& step_input = step_input_;
    clear_step_input(step_input);
    draw(batches_per_step, step_input);
    double input_wait = seconds_since(t0);
    StepResults& r = step_results_;
    const int64_t images_seen = global_step_ * step_input.global_batch;  // Note [value schedules]
    run_step(step_input, images_seen, r);
    ++global_step_;
    if (ema_) {
      const nn::ValueSchedule& half_life = spec_.generator_ema.half_life_kimg;
      if (!half_life.is_constant()) ema_->set_half_life_kimg(half_life.at(images_seen));
      ema_->update(*replicas_[0].generator.module, r.global_batch, images_seen + r.global_batch);
    }
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
  Tensor out = run_generator(spec_, g, z, spec_.num_classes > 0 ? labels.to(z.device()) : Tensor());
  g.train(was_training);
  return out;
}

EvalResults GanEstimator::evaluate(const BatchSource& input, int64_t steps) {
  EvalResults total;
  const bool conditional = spec_.num_classes > 0;
  // Each replica reports to its own reporter, reduced once per step (Note [evaluation] in gan/step/replica.h).
  std::vector<StatsReporter> stats(replicas_.size(), evaluation_statistics(objective_));
  const StatsReporter& first = stats[0];
  const int d = first.find("D"), g = first.find("G"), real = first.find(kRealAccuracy), fake = first.find(kFakeAccuracy);
  float real_correct = 0.f, fake_correct = 0.f;
  for (int64_t s = 0; s < steps; ++s) {
    data::Batch batch = input();
    strategy_->run([&](const distribute::ReplicaContext& ctx) {
      StatsReporter& mine = stats[ctx.local_index];
      mine.begin_step(ctx.device);
      // evaluation noise: its own stream (substep -1), independent of training; no schedule applies
      StepKeys keys{seed_, s, -1};
      const ShardInput shard = make_shard(batch, batch.images.size(0), ctx, conditional);
      evaluate_shard(spec_, objective_, replicas_[ctx.local_index], shard, keys, ctx, mine);
      mine.reduce(ctx);
    });
    total.discriminator_loss += first.value(d);
    total.generator_loss += first.value(g);
    real_correct += static_cast<float>(first.sum(real));
    fake_correct += static_cast<float>(first.sum(fake));
    total.examples += batch.images.size(0);
    ++total.steps;
  }
  if (total.steps > 0) {
    total.discriminator_loss /= static_cast<float>(total.steps);
    total.generator_loss /= static_cast<float>(total.steps);
  }
  if (total.examples > 0) {
    total.real_accuracy = real_correct / static_cast<float>(total.examples);
    total.fake_accuracy = fake_correct / static_cast<float>(total.examples);
  }
  return total;
}

}  // namespace gantry::gan
