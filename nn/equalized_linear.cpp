#include "nn/equalized_linear.h"

#include <cmath>

#include "core/ops/ops.h"
#include "nn/init.h"

namespace gantry::nn {

EqualizedLinear::EqualizedLinear(int64_t in_features, int64_t out_features, EqualizedLinearOptions o,
                                 RngKey key)
    : Cloneable("EqualizedLinear"), in_(in_features), out_(out_features), o_(o) {
  GANTRY_CHECK(in_ > 0 && out_ > 0, "EqualizedLinear: expected positive in/out features, found ", in_,
               " and ", out_);
  GANTRY_CHECK(o_.lr_mul > 0, "EqualizedLinear: expected lr_mul > 0, found ", o_.lr_mul);
  register_parameter("weight", ops::empty({out_, in_}));  // [out, in]
  if (o_.bias) register_parameter("bias", ops::empty({out_}));
  reset_parameters(key);
}

void EqualizedLinear::reset_parameters(RngKey key) {
  init::normal_(get("weight"), 0.0, 1.0 / o_.lr_mul, init::key_for(key, "weight"));
  if (o_.bias) init::constant_(get("bias"), o_.bias_init / o_.lr_mul);
}

Tensor EqualizedLinear::forward_impl(const Tensor& x) {
  GANTRY_CHECK(x.dim() == 2 && x.size(1) == in_, "EqualizedLinear: expected input (N, ", in_, "), found ",
               x.shape().str());
  const float weight_gain = o_.lr_mul / std::sqrt(static_cast<float>(in_));
  Tensor y = ops::linear(x, ops::mul(get("weight"), weight_gain));
  return bias_act(y, o_.bias ? get("bias") : Tensor(), o_.lr_mul, o_.activation);
}

std::string EqualizedLinear::extra_repr() const {
  return "in_features=" + std::to_string(in_) + ", out_features=" + std::to_string(out_) +
         ", bias=" + (o_.bias ? "true" : "false") + ", lr_mul=" + std::to_string(o_.lr_mul) +
         ", activation=" + bias_activation_name(o_.activation);
}

}  // namespace gantry::nn
