// Instance normalisation as torch.nn.InstanceNorm2d (track_running_stats = false): each
// (example, channel) plane is normalised by its own mean and biased variance over (H, W);
// optional per-channel affine weight/bias (PyTorch's default is affine = false). Composed
// from differentiable ops, so it is twice differentiable.
#pragma once

#include "nn/module.h"

namespace gantry::nn {

class InstanceNorm2d : public Cloneable<InstanceNorm2d> {
 public:
  explicit InstanceNorm2d(int64_t num_features, double eps = 1e-5, bool affine = false);

  void reset_parameters(RngKey key) override;
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& x) override;  // (N, C, H, W)

 private:
  int64_t c_;
  double eps_;
  bool affine_;
};

}  // namespace gantry::nn
