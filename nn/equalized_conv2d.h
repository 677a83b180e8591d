// Convolution with equalised learning rate (StyleGAN2's Conv2dLayer): weight [out, in, k, k]
// stored N(0, 1) and multiplied by 1 / sqrt(in k k) at run time, bias (zeros) added with the
// activation by bias_act, optional FIR up- or down-sampling by 2 fused as conv2d_resample does
// (the discriminator's filtered down-sampling). Padding k / 2, so the size only changes by the
// resampling factor. The filter is the buffer `resample_filter` (StyleGAN2's name). clamp > 0
// limits the output to [-clamp, clamp] (StyleGAN2-ADA's conv_clamp, nn/bias_act.h).
#pragma once

#include <vector>

#include "nn/bias_act.h"
#include "nn/module.h"

namespace gantry::nn {

struct EqualizedConv2dOptions {
  bool bias = true;
  BiasActivation activation = BiasActivation::Linear;
  int up = 1;
  int down = 1;
  float clamp = 0.0f;  // 0: none
  std::vector<float> resample_taps = {1, 3, 3, 1};
};

class EqualizedConv2d : public Cloneable<EqualizedConv2d> {
 public:
  EqualizedConv2d(int64_t in_channels, int64_t out_channels, int kernel, EqualizedConv2dOptions o = {},
                  RngKey key = {});

  int64_t in_channels() const { return in_; }
  int64_t out_channels() const { return out_; }
  int kernel() const { return k_; }
  void reset_parameters(RngKey key) override;
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& x) override;  // (N, in, H, W) -> (N, out, H up / down, ...)

 private:
  int64_t in_, out_;
  int k_;
  EqualizedConv2dOptions o_;
};

}  // namespace gantry::nn
