#include "nn/linear.h"

#include "core/ops/ops.h"
#include "nn/init.h"

namespace gantry::nn {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, RngKey key)
    : Cloneable("Linear"), in_(in_features), out_(out_features), bias_(bias) {
  GANTRY_CHECK(in_ > 0 && out_ > 0, "Linear: expected positive in/out features, found ", in_,
               " and ", out_);
  register_parameter("weight", ops::empty({out_, in_}));  // [out, in]
  if (bias_) register_parameter("bias", ops::empty({out_}));
  reset_parameters(key);
}

void Linear::reset_parameters(RngKey key) {
  const char* w = has("weight_orig") ? "weight_orig" : "weight";
  init::default_weight_(get(w), init::key_for(key, "weight"));
  if (bias_) init::default_bias_(get("bias"), get(w), init::key_for(key, "bias"));
}

Tensor Linear::forward_impl(const Tensor& x) {
  GANTRY_CHECK(x.dim() == 2 && x.size(1) == in_, "Linear: expected input (N, ", in_,
               "), found ", x.shape().str());
  return ops::linear(x, get("weight"), bias_ ? get("bias") : Tensor());
}

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_) + ", out_features=" + std::to_string(out_) +
         ", bias=" + (bias_ ? "true" : "false");
}

}  // namespace gantry::nn
