#include "nn/upsample.h"

#include "core/ops/ops.h"

namespace gantry::nn {

Upsample::Upsample(int scale_factor) : Cloneable("Upsample"), scale_(scale_factor) {
  GANTRY_CHECK(scale_ >= 1, "Upsample: expected an integer scale factor >= 1, found ", scale_);
}

Tensor Upsample::forward_impl(const Tensor& x) {
  GANTRY_CHECK(x.dim() == 4, "Upsample: expected input (N, C, H, W), found ", x.shape().str());
  return ops::upsample_nearest2d(x, scale_);
}

std::string Upsample::extra_repr() const {
  return "scale_factor=" + std::to_string(scale_) + ", mode=nearest";
}

}  // namespace gantry::nn
