#include "gan/trained_network.h"

#include <chrono>
#include <utility>

namespace gantry::gan {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Reads the update's loss values (NetworkUpdate::pending_losses) into its losses.
void read_losses(NetworkUpdate& u) {
  for (const auto& [name, value] : u.pending_losses) {
    if (name.empty()) {
      u.losses.total = value.item();
    } else if (LossComponent* c = u.losses.find(name)) {
      c->value = value.item();
      c->computed = true;
    } else {
      u.losses.components.push_back({name, value.item(), true});
    }
  }
  u.pending_losses.clear();  // keeps its capacity
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

void NetworkUpdate::add_pending(std::string_view name, const Tensor& value) {
  if (value.defined()) pending_losses.emplace_back(name, value.detach());
}

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

// Note [loss components]: every replica reports the same component names in the same order
// (zero when a term is inactive or the shard is empty), so the loss all-reduce lines up across
// ranks. A name given twice is one component (the last value read wins), as in a map.
NetworkUpdate& start_update(TrainedNetwork& net) {
  UpdateLosses& out = net.update.losses;
  out.total = 0.f;
  out.components.clear();
  out.all_reduce_seconds = 0;
  out.update_seconds = 0;
  out.skipped = 0;
  for (std::string_view name : net.loss_components)
    if (out.find(name) == nullptr) out.components.push_back({name, 0.f, false});
  net.update.pending_losses.clear();
  return net.update;
}

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
  UpdateLosses& out = net.update.losses;
  // Note [non-finite updates]: an update whose all-reduced gradients hold NaN/Inf is not applied.
  // Every replica sees the same reduced values, so all skip together and stay identical.
  const bool finite = reducer.wait();
  read_losses(net.update);
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
