#include "nn/conditional_batch_norm.h"

#include "core/ops/ops.h"
#include "nn/init.h"

namespace gantry::nn {

ConditionalBatchNorm2d::ConditionalBatchNorm2d(int64_t num_features, int64_t num_classes,
                                               BatchNormOptions o)
    : Cloneable("ConditionalBatchNorm2d"), c_(num_features), classes_(num_classes) {
  GANTRY_CHECK(c_ > 0, "ConditionalBatchNorm2d: expected a positive number of features, found ", c_);
  GANTRY_CHECK(classes_ > 0, "ConditionalBatchNorm2d: expected a positive number of classes, found ",
               classes_);
  o.affine = false;  // the per-class tables are the affine map
  register_parameter("gain", ops::zeros({classes_, c_}));
  register_parameter("bias", ops::zeros({classes_, c_}));
  register_module("bn", std::make_shared<BatchNorm2d>(c_, o));
}

void ConditionalBatchNorm2d::reset_parameters(RngKey) {
  init::zeros_(get("gain"));
  init::zeros_(get("bias"));
}

Tensor ConditionalBatchNorm2d::forward_impl(const Tensor&) {
  GANTRY_FAIL("ConditionalBatchNorm2d: labels are required (forward(x, labels))");
}

Tensor ConditionalBatchNorm2d::forward_impl(const Tensor& x, const Tensor& labels) {
  return forward_activated(x, labels, {});
}

Tensor ConditionalBatchNorm2d::forward_activated(const Tensor& x, const Tensor& labels,
                                                 const BatchNormActivation& act) {
  GANTRY_CHECK(x.dim() == 4 && x.size(1) == c_, "ConditionalBatchNorm2d: expected input (N, ", c_,
               ", H, W), found ", x.shape().str());
  GANTRY_CHECK(labels.dtype() == DType::I64 && labels.dim() == 1 && labels.size(0) == x.size(0),
               "ConditionalBatchNorm2d: expected i64 labels (", x.size(0), "), found ",
               to_string(labels.dtype()), " ", labels.shape().str());
  Tensor normalized = child("bn")->forward(x);  // (N, C, H, W)
  const Shape per_example{x.size(0), c_, 1, 1};
  Tensor gain = ops::reshape(ops::embedding(get("gain"), labels), per_example);
  Tensor bias = ops::reshape(ops::embedding(get("bias"), labels), per_example);
  return ops::activate(normalized * (gain + 1.0f) + bias, act);  // (1 + gain) x̂ + bias
}

std::string ConditionalBatchNorm2d::extra_repr() const {
  return std::to_string(c_) + ", classes=" + std::to_string(classes_);
}

}  // namespace gantry::nn
