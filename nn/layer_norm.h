// Layer normalisation over the trailing `normalized_shape` dims, as torch.nn.LayerNorm
// (parameters weight, bias of that shape when elementwise_affine). Twice differentiable.
#pragma once

#include <vector>

#include "nn/module.h"

namespace gantry::nn {

class LayerNorm : public Cloneable<LayerNorm> {
 public:
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5,
                     bool elementwise_affine = true);

  const std::vector<int64_t>& normalized_shape() const { return shape_; }
  void reset_parameters(RngKey key) override;
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& x) override;

 private:
  std::vector<int64_t> shape_;
  double eps_;
  bool affine_;
};

}  // namespace gantry::nn
