#include "nn/layer_norm.h"

#include "core/ops/ops.h"
#include "nn/init.h"

namespace gantry::nn {

LayerNorm::LayerNorm(std::vector<int64_t> normalized_shape, double eps, bool elementwise_affine)
    : Cloneable("LayerNorm"), shape_(std::move(normalized_shape)), eps_(eps),
      affine_(elementwise_affine) {
  GANTRY_CHECK(!shape_.empty(), "LayerNorm: expected a non-empty normalized_shape");
  for (int64_t d : shape_)
    GANTRY_CHECK(d > 0, "LayerNorm: expected positive sizes in normalized_shape, found ", d);
  if (affine_) {
    register_parameter("weight", ops::ones(Shape(shape_)));
    register_parameter("bias", ops::zeros(Shape(shape_)));
  }
}

void LayerNorm::reset_parameters(RngKey) {
  if (!affine_) return;
  init::ones_(get("weight"));
  init::zeros_(get("bias"));
}

Tensor LayerNorm::forward_impl(const Tensor& x) {
  const int n = static_cast<int>(shape_.size());
  bool ok = x.dim() > n;
  for (int i = 0; ok && i < n; ++i) ok = x.size(x.dim() - n + i) == shape_[i];
  GANTRY_CHECK(ok, "LayerNorm: expected input (N, ..., ", Shape(shape_).str(), "), found ",
               x.shape().str());
  return ops::layer_norm(x, affine_ ? get("weight") : Tensor(), affine_ ? get("bias") : Tensor(), n,
                         static_cast<float>(eps_));
}

std::string LayerNorm::extra_repr() const {
  return Shape(shape_).str() + ", eps=" + std::to_string(eps_) +
         ", elementwise_affine=" + (affine_ ? "true" : "false");
}

}  // namespace gantry::nn
