#include "nn/activation.h"

#include "core/ops/ops.h"

namespace gantry::nn {

Tensor ReLU::forward_impl(const Tensor& x) { return ops::relu(x); }

Tensor LeakyReLU::forward_impl(const Tensor& x) {
  return ops::leaky_relu(x, static_cast<float>(slope_));
}

std::string LeakyReLU::extra_repr() const {
  return "negative_slope=" + std::to_string(slope_);
}

Tensor Tanh::forward_impl(const Tensor& x) { return ops::tanh(x); }

Tensor Sigmoid::forward_impl(const Tensor& x) { return ops::sigmoid(x); }

Tensor SiLU::forward_impl(const Tensor& x) { return ops::silu(x); }

Tensor GELU::forward_impl(const Tensor& x) {
  switch (approximate_) {
    case Approximation::Tanh: return ops::gelu_tanh(x);
  }
  return ops::gelu_tanh(x);
}

}  // namespace gantry::nn
