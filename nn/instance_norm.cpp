#include "nn/instance_norm.h"

#include "core/ops/ops.h"
#include "nn/init.h"

namespace gantry::nn {

InstanceNorm2d::InstanceNorm2d(int64_t num_features, double eps, bool affine)
    : Cloneable("InstanceNorm2d"), c_(num_features), eps_(eps), affine_(affine) {
  GANTRY_CHECK(c_ > 0, "InstanceNorm2d: expected a positive number of features, found ", c_);
  if (affine_) {
    register_parameter("weight", ops::ones({c_}));
    register_parameter("bias", ops::zeros({c_}));
  }
}

void InstanceNorm2d::reset_parameters(RngKey) {
  if (!affine_) return;
  init::ones_(get("weight"));
  init::zeros_(get("bias"));
}

Tensor InstanceNorm2d::forward_impl(const Tensor& x) {
  GANTRY_CHECK(x.dim() == 4 && x.size(1) == c_, "InstanceNorm2d: expected input (N, ", c_,
               ", H, W), found ", x.shape().str());
  GANTRY_CHECK(x.size(2) * x.size(3) > 1, "InstanceNorm2d: expected more than one spatial "
               "element per channel, found input ", x.shape().str());
  Tensor centered = ops::sub(x, ops::mean(x, {2, 3}, true));
  Tensor var = ops::mean(ops::square(centered), {2, 3}, true);  // biased, as PyTorch
  Tensor y = ops::mul(centered, ops::rsqrt(ops::add(var, static_cast<float>(eps_))));
  if (affine_) {
    y = ops::add(ops::mul(y, ops::reshape(get("weight"), {1, c_, 1, 1})),
                 ops::reshape(get("bias"), {1, c_, 1, 1}));
  }
  return y;
}

std::string InstanceNorm2d::extra_repr() const {
  return std::to_string(c_) + ", eps=" + std::to_string(eps_) +
         ", affine=" + (affine_ ? "true" : "false");
}

}  // namespace gantry::nn
