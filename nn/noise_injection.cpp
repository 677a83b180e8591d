#include "nn/noise_injection.h"

#include "core/ops/ops.h"
#include "nn/init.h"

namespace gantry::nn {

NoiseInjection::NoiseInjection() : Cloneable("NoiseInjection") {
  register_parameter("noise_strength", ops::zeros(Shape{}));
}

void NoiseInjection::reset_parameters(RngKey) { init::zeros_(get("noise_strength")); }

Tensor NoiseInjection::forward_impl(const Tensor& x) {
  GANTRY_CHECK(x.dim() == 4, "NoiseInjection: expected input (N, C, H, W), found ", x.shape().str());
  const int64_t n = x.size(0), h = x.size(2), w = x.size(3);
  const uint64_t offset = rng_first_example() * static_cast<uint64_t>(h * w);
  Tensor noise = ops::randn({n, 1, h, w}, rng_key(), offset, x.device());
  return ops::add(x, ops::mul(noise, get("noise_strength")));
}

}  // namespace gantry::nn
