#include "nn/rms_norm.h"

#include <sstream>

#include "core/ops/ops.h"
#include "nn/init.h"

namespace gantry::nn {

RMSNorm::RMSNorm(int64_t dim, double eps, bool elementwise_affine)
    : Cloneable("RMSNorm"), dim_(dim), eps_(eps), affine_(elementwise_affine) {
  GANTRY_CHECK(dim_ > 0, "RMSNorm: expected a positive dimension, found ", dim_);
  GANTRY_CHECK(eps_ >= 0, "RMSNorm: expected eps >= 0, found ", eps_);
  if (affine_) register_parameter("weight", ops::ones({dim_}));
}

void RMSNorm::reset_parameters(RngKey) {
  if (affine_) init::ones_(get("weight"));
}

Tensor RMSNorm::forward_impl(const Tensor& x) {
  GANTRY_CHECK(x.dim() >= 1 && x.size(-1) == dim_, "RMSNorm: expected input (..., ", dim_, "), found ",
               x.shape().str());
  return ops::rms_norm(x, affine_ ? get("weight") : Tensor(), static_cast<float>(eps_));
}

std::string RMSNorm::extra_repr() const {
  // a stream (1e-06, not to_string's 0.000001), which also avoids GCC 12's false -Wstringop-overflow
  // on "literal" + std::string
  std::ostringstream out;
  out << "(" << dim_ << ",), eps=" << eps_ << ", elementwise_affine=" << (affine_ ? "true" : "false");
  return out.str();
}

}  // namespace gantry::nn
