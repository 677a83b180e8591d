// StyleGAN2's per-layer noise input: x + noise_strength * n with n ~ N(0, 1) of shape
// (N, 1, H, W), one map per example shared by the channels, and noise_strength a learned scalar
// (initially 0). The noise is the module's Philox stream (Note [module randomness]) starting at
// element first_example * H * W, so example i gets the same noise on whichever replica runs it
// and a resumed run redraws exactly what the interrupted one would have. Random in eval mode as
// well (StyleGAN2's noise_mode "random").
#pragma once

#include "nn/module.h"

namespace gantry::nn {

class NoiseInjection : public Cloneable<NoiseInjection> {
 public:
  NoiseInjection();
  void reset_parameters(RngKey key) override;

 protected:
  Tensor forward_impl(const Tensor& x) override;  // (N, C, H, W) -> same
};

}  // namespace gantry::nn
