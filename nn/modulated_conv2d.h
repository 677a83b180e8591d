// StyleGAN2's modulated convolution in the fused-input form (modulated_conv2d with
// fused_modconv = False): a learned affine map turns the latent w (N, w_dim) into styles s
// (N, I); then
//     y = demod (N, O) * conv(x * s, weight)
// with one weight shared by the batch, demod[n, o] = 1 / sqrt(sum_{i,k} (weight[o,i,k] s[n,i])^2
// + 1e-8), computed as a matmul of s^2 with the per-(o, i) sums of weight^2. That equals the
// per-sample convolution with weights weight * s / ||weight * s|| (StyleGAN2's grouped form) but
// runs as one ordinary convolution, so oneDNN/cuDNN and the existing second derivatives of
// convolution (Note [second derivatives of convolution]) apply unchanged: path-length
// regularisation differentiates through it twice.
//
// up = 2 up-samples as StyleGAN2 does (conv2d_resample: transposed convolution, then the [1,3,3,1]
// FIR with gain 4). demodulate = false is StyleGAN2's toRGB: no demodulation, the styles scaled
// by 1 / sqrt(I k k) instead. Parameters: affine.weight, affine.bias (initial styles 1), weight
// [O, I, k, k] ~ N(0, 1); the buffer resample_filter when up > 1. No bias or noise: the
// synthesis layer adds those after (NoiseInjection, bias_act), in StyleGAN2's order.
#pragma once

#include <vector>

#include "nn/module.h"

namespace gantry::nn {

struct ModulatedConv2dOptions {
  bool demodulate = true;
  int up = 1;
  std::vector<float> resample_taps = {1, 3, 3, 1};
};

class ModulatedConv2d : public Cloneable<ModulatedConv2d> {
 public:
  ModulatedConv2d(int64_t in_channels, int64_t out_channels, int kernel, int64_t w_dim,
                  ModulatedConv2dOptions o = {}, RngKey key = {});

  // x (N, in, H, W), w (N, w_dim) -> (N, out, H up, W up).
  Tensor forward_with_style(const Tensor& x, const Tensor& w);
  // The styles s (N, in) of latents w (N, w_dim), toRGB's 1 / sqrt(I k k) included.
  Tensor styles(const Tensor& w);

  int64_t in_channels() const { return in_; }
  int64_t out_channels() const { return out_; }
  int kernel() const { return k_; }
  void reset_parameters(RngKey key) override;
  std::string extra_repr() const override;

 protected:
  // Throws: a modulated convolution needs its latents (forward_with_style).
  Tensor forward_impl(const Tensor& x) override;

 private:
  int64_t in_, out_;
  int k_;
  int64_t w_dim_;
  ModulatedConv2dOptions o_;
};

}  // namespace gantry::nn
