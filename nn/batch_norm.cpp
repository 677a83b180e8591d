#include "nn/batch_norm.h"

#include <sstream>

#include "core/autograd/grad_mode.h"
#include "core/ops/in_place.h"
#include "core/ops/ops.h"
#include "nn/init.h"

namespace gantry::nn {

BatchNorm::BatchNorm(std::string type, int64_t num_features, BatchNormOptions o)
    : Module(std::move(type)), c_(num_features), o_(o) {
  GANTRY_CHECK(c_ > 0, type_name(), ": expected a positive number of features, found ", c_);
  GANTRY_CHECK(o_.eps > 0, type_name(), ": expected eps > 0, found ", o_.eps);
  GANTRY_CHECK(!o_.momentum || (*o_.momentum >= 0 && *o_.momentum <= 1), type_name(),
               ": expected momentum in [0, 1], found ", o_.momentum.value_or(0));
  if (o_.affine) {
    register_parameter("weight", ops::ones({c_}));
    register_parameter("bias", ops::zeros({c_}));
  }
  if (o_.track_running_stats) {
    register_buffer("running_mean", ops::zeros({c_}));
    register_buffer("running_var", ops::ones({c_}));
    register_buffer("num_batches_tracked", ops::zeros(Shape{}, Device::cpu(), DType::I64));
  }
}

void BatchNorm::reset_parameters(RngKey) {
  if (o_.affine) {
    init::ones_(get("weight"));
    init::zeros_(get("bias"));
  }
  if (o_.track_running_stats) {
    init::zeros_(get("running_mean"));
    init::ones_(get("running_var"));
    init::zeros_(get("num_batches_tracked"));
  }
}

int64_t BatchNorm::next_batch_count() {
  NoGradGuard no_grad;
  const Tensor& count = get("num_batches_tracked");
  if (!count.same(counted_) || count.version() != counted_version_)
    count_ = count.to(Device::cpu()).data<int64_t>()[0];
  ++count_;
  ops::fill_(count, static_cast<double>(count_));  // exact: i64 fills convert from the double
  counted_ = count;
  counted_version_ = count.version();
  return count_;
}

Tensor BatchNorm::normalize(const Tensor& x, const BatchNormActivation& act) {
  GANTRY_CHECK(x.size(1) == c_, type_name(), ": expected ", c_, " channels in dim 1, found input ",
               x.shape().str());
  double factor = o_.momentum.value_or(0.0);
  if (is_training() && o_.track_running_stats) {
    const int64_t n = next_batch_count();
    if (!o_.momentum) factor = 1.0 / static_cast<double>(n);  // cumulative average
  }
  bool use_running = o_.track_running_stats;
  bool batch_stats = is_training() || !use_running;
  Tensor rm = use_running ? get("running_mean") : Tensor();
  Tensor rv = use_running ? get("running_var") : Tensor();
  // Synchronized: global batch statistics (in eval mode only without running statistics).
  if (batch_stats && replica_sum_) {
    Tensor y = sync_batch_norm(x, o_.affine ? get("weight") : Tensor(),
                               o_.affine ? get("bias") : Tensor(), rm, rv,
                               static_cast<float>(factor), static_cast<float>(o_.eps), replica_sum_);
    return ops::activate(y, act);  // not fused: synchronized statistics come from other ops
  }
  return ops::batch_norm(x, o_.affine ? get("weight") : Tensor(), o_.affine ? get("bias") : Tensor(),
                         rm, rv, batch_stats, static_cast<float>(factor),
                         static_cast<float>(o_.eps), act);
}

std::string BatchNorm::extra_repr() const {
  std::ostringstream s;
  s << c_ << ", eps=" << o_.eps << ", momentum=";
  if (o_.momentum) s << *o_.momentum;
  else s << "None";
  s << ", affine=" << (o_.affine ? "true" : "false")
    << ", track_running_stats=" << (o_.track_running_stats ? "true" : "false");
  return s.str();
}

Tensor BatchNorm1d::forward_impl(const Tensor& x) {
  GANTRY_CHECK(x.dim() == 2 || x.dim() == 3, "BatchNorm1d: expected input (N, C) or (N, C, L), "
               "found ", x.shape().str());
  if (x.dim() == 2) return normalize(x);
  Tensor y = normalize(ops::reshape(x, {x.size(0), x.size(1), x.size(2), 1}));
  return ops::reshape(y, x.shape());
}

Tensor BatchNorm2d::forward_impl(const Tensor& x) { return forward_activated(x, {}); }

Tensor BatchNorm2d::forward_activated(const Tensor& x, const BatchNormActivation& act) {
  GANTRY_CHECK(x.dim() == 4, "BatchNorm2d: expected input (N, C, H, W), found ", x.shape().str());
  return normalize(x, act);
}

}  // namespace gantry::nn
