// Fully connected layer with equalised learning rate (StyleGAN2's FullyConnectedLayer): the
// weight [out, in] is stored as N(0, 1) / lr_mul and multiplied by lr_mul / sqrt(in) at run
// time, the bias is stored as bias_init / lr_mul and multiplied by lr_mul, so Adam's per-
// parameter step moves every layer at the same relative speed, lr_mul slower for the mapping
// network. The stored values and names (weight, bias) are StyleGAN2's, so its state dicts map 1:1.
#pragma once

#include "nn/bias_act.h"
#include "nn/module.h"

namespace gantry::nn {

struct EqualizedLinearOptions {
  bool bias = true;
  float bias_init = 0.0f;  // the bias's initial *effective* value (1 for style affines)
  float lr_mul = 1.0f;
  BiasActivation activation = BiasActivation::Linear;
};

class EqualizedLinear : public Cloneable<EqualizedLinear> {
 public:
  EqualizedLinear(int64_t in_features, int64_t out_features, EqualizedLinearOptions o = {},
                  RngKey key = {});

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  const EqualizedLinearOptions& options() const { return o_; }
  void reset_parameters(RngKey key) override;
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& x) override;  // (N, in) -> (N, out)

 private:
  int64_t in_, out_;
  EqualizedLinearOptions o_;
};

}  // namespace gantry::nn
