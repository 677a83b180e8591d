// Nearest-neighbour upsampling by an integer factor, as torch.nn.Upsample(scale_factor=s,
// mode="nearest").
#pragma once

#include "nn/module.h"

namespace gantry::nn {

class Upsample : public Cloneable<Upsample> {
 public:
  explicit Upsample(int scale_factor = 2);
  int scale_factor() const { return scale_; }
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& x) override;  // (N, C, H, W) -> (N, C, sH, sW)

 private:
  int scale_;
};

}  // namespace gantry::nn
