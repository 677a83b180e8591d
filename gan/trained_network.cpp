#include "gan/trained_network.h"

#include <chrono>
#include <utility>

namespace gantry::gan {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TrainedNetwork make_trained_network(nn::ModulePtr module, const OptimizerFn& optimizer,
                                    std::shared_ptr<const nn::LrSchedule> lr_schedule,
                                    const LossScaleConfig& loss_scale, const distribute::ReplicaContext& ctx) {
  TrainedNetwork net;
  net.module = std::move(module);
  net.params = net.module->parameters();
  net.reducer = std::make_unique<distribute::GradientReducer>(net.params, ctx.device, ctx.gradient_bucket_bytes);
  net.optimizer = optimizer(net.params);
  net.scaler = LossScaler(loss_scale);
  net.lr_schedule = std::move(lr_schedule);
  net.base_lr = net.optimizer->lr();
  return net;
}

void schedule_learning_rate(TrainedNetwork& net, int64_t global_step) {
  if (net.lr_schedule) net.optimizer->set_lr(net.lr_schedule->lr(net.base_lr, global_step));
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
  // Every replica sees the same reduced values, so all skip together and stay identical.
  const bool finite = reducer.wait();
  out.all_reduce_seconds += reducer.communication_seconds();
  if (!finite) {
    net.scaler.update(false);  // Note [dynamic loss scale]: the next update retries with half the scale
    ++out.skipped;
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  // Exact: the scale is a power of two (gan/loss_scaler.h).
  if (net.scaler.enabled()) reducer.scale_gradients(1.f / net.scaler.scale());
  net.scaler.update(true);
  net.optimizer->step(reducer.gradients());
  out.update_seconds += seconds_since(t0);
}

}  // namespace gantry::gan
