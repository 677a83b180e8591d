// RMS normalisation over the last dimension, as torch.nn.RMSNorm(D, eps, elementwise_affine)
// (torch >= 2.4; LLaMA, GAT): y = x / sqrt(mean(x^2, -1) + eps) * weight, parameter "weight"
// (D) starting at ones when elementwise_affine. eps defaults to 1e-6 (LLaMA's, and the sequential
// builder's): torch's eps=None is finfo(float32).eps = 1.1920929e-7, so a torch twin passes
// eps=1e-6 explicitly. Composed of differentiable ops (ops::rms_norm): derivatives of every order.
#pragma once

#include "nn/module.h"

namespace gantry::nn {

class RMSNorm : public Cloneable<RMSNorm> {
 public:
  explicit RMSNorm(int64_t dim, double eps = 1e-6, bool elementwise_affine = true);

  int64_t dim() const { return dim_; }
  double eps() const { return eps_; }
  void reset_parameters(RngKey key) override;  // weight 1
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& x) override;  // (..., D) -> (..., D)

 private:
  int64_t dim_;
  double eps_;
  bool affine_;
};

}  // namespace gantry::nn
