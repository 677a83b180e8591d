// The building blocks of the FID Inception-v3 (pytorch-fid's variant of torchvision's layout),
// inference only. Every convolution is torchvision's BasicConv2d (conv without bias, batch norm
// with eps 0.001, ReLU); at load time the batch norm is folded into the convolution's weight and
// bias, so a block runs convolutions, pools and concatenations only.
//
// Block kinds and what the FID variant changes (pytorch-fid's FIDInceptionA/C/E_1/E_2):
//   A  (Mixed_5b/5c/5d)  pool branch: 3x3 avg pool, stride 1, pad 1, count_include_pad=False
//   B  (Mixed_6a)        unchanged: 3x3 max pool stride 2
//   C  (Mixed_6b..6e)    pool branch as A
//   D  (Mixed_7a)        unchanged
//   E1 (Mixed_7b)        pool branch as A
//   E2 (Mixed_7c)        pool branch: 3x3 *max* pool, stride 1, pad 1
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/ops/ops.h"
#include "core/tensor.h"
#include "nn/module.h"

namespace gantry::metrics {

// One BasicConv2d: its torchvision name and geometry.
struct InceptionConvSpec {
  std::string name;  // "Conv2d_1a_3x3", "Mixed_5b.branch1x1", ...
  int64_t in = 0, out = 0;
  int kh = 1, kw = 1, stride = 1, pad_h = 0, pad_w = 0;
};

// The weights-file tensors of one BasicConv2d: <name>.conv.weight (out, in, kh, kw) and
// <name>.bn.{weight, bias, running_mean, running_var} (out).
std::vector<std::pair<std::string, Shape>> inception_conv_tensors(const InceptionConvSpec& spec);

// A BasicConv2d with its batch norm folded in: relu(conv(x, w * s) + (beta - mean * s)), with
// s = gamma / sqrt(running_var + 0.001).
class FoldedConv {
 public:
  FoldedConv() = default;
  // `tensors` holds the five tensors above (checked by the caller), on any device.
  FoldedConv(const InceptionConvSpec& spec, const std::map<std::string, Tensor>& tensors, Device device);
  Tensor operator()(const Tensor& x) const;  // (N, in, H, W) -> (N, out, H', W')
  FoldedConv to(Device device) const;

 private:
  Tensor weight_, bias_;
  ops::Conv2dOptions options_;
};

enum class InceptionBlockKind : uint8_t { A, B, C, D, E1, E2 };

class InceptionBlock {
 public:
  // The BasicConv2d specs of a block named `name` ("Mixed_5b") of `kind` taking `in` channels;
  // `extra` is A's pool_features or C's channels_7x7 (ignored by the others).
  static std::vector<InceptionConvSpec> conv_specs(InceptionBlockKind kind, const std::string& name, int64_t in,
                                                   int64_t extra);
  // Output channels for `in` input channels.
  static int64_t out_channels(InceptionBlockKind kind, int64_t in, int64_t extra);

  InceptionBlock() = default;
  InceptionBlock(InceptionBlockKind kind, const std::string& name, int64_t in, int64_t extra,
                 const std::map<std::string, Tensor>& tensors, Device device);
  Tensor operator()(const Tensor& x) const;  // (N, in, H, W) -> (N, out, H', W')
  InceptionBlock to(Device device) const;

 private:
  const FoldedConv& conv(const char* branch) const;

  InceptionBlockKind kind_ = InceptionBlockKind::A;
  std::string name_;
  std::map<std::string, FoldedConv> convs_;  // by branch name ("branch1x1", ...)
};

}  // namespace gantry::metrics
