// 2-D convolution and transposed convolution in PyTorch's weight layouts: Conv2d
// [out, in, kh, kw], ConvTranspose2d [in, out, kh, kw]. Square kernels and symmetric
// stride/padding/dilation (what the JSON builder offers); groups = 1.
#pragma once

#include "nn/module.h"

namespace gantry::nn {

struct ConvOptions {
  int stride = 1;
  int padding = 0;
  int dilation = 1;
  int output_padding = 0;  // ConvTranspose2d only
  bool bias = true;
};

class Conv2d : public Cloneable<Conv2d> {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, int kernel, ConvOptions o = {},
         RngKey key = {});

  int64_t in_channels() const { return in_; }
  int64_t out_channels() const { return out_; }
  const ConvOptions& options() const { return o_; }
  int kernel() const { return k_; }
  // Spatial output size for input size `in` (floor((in + 2p - d(k-1) - 1) / s) + 1).
  int64_t output_size(int64_t in) const;
  void reset_parameters(RngKey key) override;
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& x) override;  // (N, in, H, W) -> (N, out, H', W')

 private:
  int64_t in_, out_;
  int k_;
  ConvOptions o_;
};

class ConvTranspose2d : public Cloneable<ConvTranspose2d> {
 public:
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, int kernel, ConvOptions o = {},
                  RngKey key = {});

  int64_t in_channels() const { return in_; }
  int64_t out_channels() const { return out_; }
  const ConvOptions& options() const { return o_; }
  int kernel() const { return k_; }
  // (in - 1) s - 2p + d(k-1) + output_padding + 1
  int64_t output_size(int64_t in) const;
  void reset_parameters(RngKey key) override;
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& x) override;

 private:
  int64_t in_, out_;
  int k_;
  ConvOptions o_;
};

}  // namespace gantry::nn
