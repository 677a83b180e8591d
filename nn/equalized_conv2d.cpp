#include "nn/equalized_conv2d.h"

#include <cmath>

#include "core/ops/ops.h"
#include "nn/conv2d_resample.h"
#include "nn/init.h"

namespace gantry::nn {

EqualizedConv2d::EqualizedConv2d(int64_t in_channels, int64_t out_channels, int kernel, EqualizedConv2dOptions o,
                                 RngKey key)
    : Cloneable("EqualizedConv2d"), in_(in_channels), out_(out_channels), k_(kernel), o_(std::move(o)) {
  GANTRY_CHECK(in_ > 0 && out_ > 0 && k_ >= 1, "EqualizedConv2d: expected positive channels and kernel, found in ",
               in_, ", out ", out_, ", kernel ", k_);
  GANTRY_CHECK(o_.clamp >= 0.0f, "EqualizedConv2d: expected clamp 0 (none) or positive, found ", o_.clamp);
  GANTRY_CHECK(o_.up >= 1 && o_.down >= 1 && (o_.up == 1 || o_.down == 1),
               "EqualizedConv2d: expected up or down (not both) >= 1, found up ", o_.up, ", down ", o_.down);
  register_parameter("weight", ops::empty({out_, in_, k_, k_}));
  if (o_.bias) register_parameter("bias", ops::empty({out_}));
  if (o_.up > 1 || o_.down > 1) register_buffer("resample_filter", ops::fir_filter(o_.resample_taps));
  reset_parameters(key);
}

void EqualizedConv2d::reset_parameters(RngKey key) {
  init::normal_(get("weight"), 0.0, 1.0, init::key_for(key, "weight"));
  if (o_.bias) init::zeros_(get("bias"));
}

Tensor EqualizedConv2d::forward_impl(const Tensor& x) {
  GANTRY_CHECK(x.dim() == 4 && x.size(1) == in_, "EqualizedConv2d: expected input (N, ", in_,
               ", H, W), found ", x.shape().str());
  const float weight_gain = 1.0f / std::sqrt(static_cast<float>(in_ * k_ * k_));
  Tensor f = has("resample_filter") ? get("resample_filter") : Tensor();
  Tensor y = conv2d_resample(x, ops::mul(get("weight"), weight_gain), f, o_.up, o_.down, k_ / 2);
  return bias_act(y, o_.bias ? get("bias") : Tensor(), 1.0f, o_.activation, o_.clamp);
}

std::string EqualizedConv2d::extra_repr() const {
  return "in_channels=" + std::to_string(in_) + ", out_channels=" + std::to_string(out_) +
         ", kernel=" + std::to_string(k_) + ", up=" + std::to_string(o_.up) + ", down=" + std::to_string(o_.down) +
         ", activation=" + bias_activation_name(o_.activation) +
         (o_.clamp > 0.0f ? ", clamp=" + std::to_string(o_.clamp) : std::string());
}

}  // namespace gantry::nn
