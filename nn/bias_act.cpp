#include "nn/bias_act.h"

#include <cmath>

#include "base/error.h"
#include "core/ops/ops.h"

namespace gantry::nn {

BiasActivation parse_bias_activation(const std::string& name, const std::string& where) {
  if (name == "linear") return BiasActivation::Linear;
  if (name == "lrelu") return BiasActivation::LeakyRelu;
  GANTRY_FAIL(where, ": expected activation \"linear\" or \"lrelu\", found \"", name, "\"");
}

const char* bias_activation_name(BiasActivation a) {
  return a == BiasActivation::LeakyRelu ? "lrelu" : "linear";
}

Tensor bias_act(const Tensor& x, const Tensor& bias, float bias_gain, BiasActivation act, float clamp) {
  GANTRY_CHECK(clamp >= 0.0f, "bias_act: expected clamp 0 (none) or positive, found ", clamp);
  Tensor y = x;
  if (bias.defined()) {
    GANTRY_CHECK(x.dim() >= 2 && bias.dim() == 1 && bias.size(0) == x.size(1),
                 "bias_act: expected a bias of shape (", x.dim() >= 2 ? x.size(1) : 0, ") for input ",
                 x.shape().str(), ", found ", bias.shape().str());
    Shape b_shape(std::vector<int64_t>(static_cast<size_t>(x.dim()), 1));
    b_shape[1] = x.size(1);
    Tensor b = bias_gain == 1.0f ? bias : ops::mul(bias, bias_gain);
    y = ops::add(y, ops::reshape(b, b_shape));
  }
  if (act == BiasActivation::LeakyRelu) y = ops::mul(ops::leaky_relu(y, 0.2f), std::sqrt(2.0f));
  if (clamp > 0.0f) y = ops::clamp(y, -clamp, clamp);
  return y;
}

}  // namespace gantry::nn
