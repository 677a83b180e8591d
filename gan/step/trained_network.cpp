#include "gan/step/trained_network.h"

#include "core/ops/ops.h"

#include <chrono>
#include <cmath>
#include <utility>

namespace gantry::gan {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TrainedNetwork make_trained_network(nn::ModulePtr module, const OptimizerFn& optimizer,
                                    const OptimizerSchedules& schedules, const LossScaleConfig& loss_scale,
                                    const distribute::ReplicaContext& ctx) {
  GANTRY_CHECK(!(schedules.lr && schedules.lr_schedule), "gan: an optimizer's lr follows a schedule over the images "
               "seen or an lr schedule over the global step, not both");
  GANTRY_CHECK(schedules.lazy_ratio > 0 && schedules.lazy_ratio <= 1, "gan: expected a lazy-regularisation ratio in "
               "(0, 1], found ", schedules.lazy_ratio);
  TrainedNetwork net;
  net.module = std::move(module);
  net.params = net.module->parameters();
  net.reducer = std::make_unique<distribute::GradientReducer>(net.params, ctx.device, ctx.gradient_bucket_bytes);
  net.optimizer = optimizer(net.params);
  net.scaler = LossScaler(loss_scale);
  net.schedules = schedules;
  net.base_lr = net.optimizer->lr();
  if (schedules.beta2) {
    net.adam = dynamic_cast<nn::Adam*>(net.optimizer.get());
    GANTRY_CHECK(net.adam, "gan: a beta2 schedule needs an adam or adamw optimizer, found ", net.optimizer->type());
  }
  return net;
}

void schedule_hyperparameters(TrainedNetwork& net, int64_t global_step, int64_t images_seen) {
  const OptimizerSchedules& s = net.schedules;
  if (s.lr_schedule) net.optimizer->set_lr(s.lr_schedule->at(global_step, net.base_lr));
  if (s.lr) net.optimizer->set_lr(s.lr->at(images_seen) * s.lazy_ratio);
  if (s.beta2) net.adam->set_beta2(std::pow(s.beta2->at(images_seen), s.lazy_ratio));
}

void start_update(TrainedNetwork& net) { net.update = UpdateOutcome{}; }

void backward(TrainedNetwork& net, const Tensor& loss, const distribute::ReplicaContext& ctx) {
  const bool scale = loss.defined() && net.scaler.enabled();
  net.reducer->backward(scale ? ops::mul(loss, net.scaler.scale()) : loss, ctx);
}

void accumulate_backward(TrainedNetwork& net, const Tensor& loss) {
  const bool scale = loss.defined() && net.scaler.enabled();
  net.reducer->accumulate(scale ? ops::mul(loss, net.scaler.scale()) : loss);
}

void apply_update(TrainedNetwork& net) {
  distribute::GradientReducer& reducer = *net.reducer;
  UpdateOutcome& out = net.update;
  // Note [non-finite updates]: an update whose all-reduced gradients hold NaN/Inf is not applied.
  // Every replica sees the same reduced values, so all skip together and stay identical. The check
  // runs once, on the summed buffer, which every rank holds alike (GradientReducer::wait).
  const bool finite = reducer.wait();
  out.all_reduce_seconds += reducer.communication_seconds();
  if (!finite) {
    // The next update retries with half the scale (Note [dynamic loss scale]).
    net.scaler.update(false);
    ++out.skipped;
    if (net.scaler.dynamic()) ++out.overflowed;
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  // Exact: the scale is a power of two (gan/spec/loss_scaler.h).
  if (net.scaler.enabled()) reducer.scale_gradients(1.f / net.scaler.scale());
  net.scaler.update(true);
  net.optimizer->step(reducer.gradients());
  out.update_seconds += seconds_since(t0);
}

}  // namespace gantry::gan
