// Class-conditional batch normalisation (de Vries et al. 2017; the generators of SNGAN and
// BigGAN): batch norm without its own affine map, then a per-class gain and bias,
//   y = (1 + gain[label]) · x̂ + bias[label],
// with gain and bias [num_classes, C] tables starting at zero, so an untrained layer is plain
// batch norm. State (PyTorch naming): gain, bias, bn.running_mean, bn.running_var,
// bn.num_batches_tracked. The inner BatchNorm2d is an ordinary one, so `sync_batch_norm` and
// eval mode behave exactly as for BatchNorm2d; the class part is made of differentiable ops, so
// second derivatives exist wherever batch norm's own do (eval mode).
#pragma once

#include "backend/functors.h"  // BatchNormActivation
#include "nn/batch_norm.h"
#include "nn/module.h"

namespace gantry::nn {

class ConditionalBatchNorm2d : public Cloneable<ConditionalBatchNorm2d> {
 public:
  ConditionalBatchNorm2d(int64_t num_features, int64_t num_classes, BatchNormOptions o = {});

  int64_t num_features() const { return c_; }
  int64_t num_classes() const { return classes_; }
  void reset_parameters(RngKey key) override;  // gain and bias 0
  std::string extra_repr() const override;
  // forward(x, labels) followed by `act` (ReLU / LeakyReLU), the form the ResNet blocks use.
  Tensor forward_activated(const Tensor& x, const Tensor& labels, const BatchNormActivation& act);

 protected:
  Tensor forward_impl(const Tensor& x) override;  // throws: labels are required
  Tensor forward_impl(const Tensor& x, const Tensor& labels) override;  // (N, C, H, W), i64 (N,)

 private:
  int64_t c_, classes_;
};

}  // namespace gantry::nn
