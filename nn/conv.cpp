#include "nn/conv.h"

#include "core/ops/ops.h"
#include "nn/init.h"

namespace gantry::nn {

namespace {

void check_options(const char* layer, int64_t in, int64_t out, int k, const ConvOptions& o,
                   bool transposed) {
  GANTRY_CHECK(in > 0 && out > 0 && k > 0, layer, ": expected positive channels and kernel, "
               "found in=", in, ", out=", out, ", kernel=", k);
  GANTRY_CHECK(o.stride > 0 && o.dilation > 0 && o.padding >= 0, layer, ": expected stride >= 1, "
               "dilation >= 1 and padding >= 0, found stride=", o.stride, ", dilation=",
               o.dilation, ", padding=", o.padding);
  if (transposed) {
    // PyTorch's rule: output padding must be smaller than either stride or dilation.
    GANTRY_CHECK(o.output_padding >= 0 && o.output_padding < std::max(o.stride, o.dilation), layer,
                 ": expected 0 <= output_padding < max(stride, dilation) = ",
                 std::max(o.stride, o.dilation), ", found ", o.output_padding);
  } else {
    GANTRY_CHECK(o.output_padding == 0, layer, ": output_padding applies to transposed "
                 "convolution only, found ", o.output_padding);
  }
}

ops::Conv2dOptions op_options(const ConvOptions& o) {
  return ops::Conv2dOptions::make(o.stride, o.padding, o.dilation, o.output_padding);
}

std::string repr(int64_t in, int64_t out, int k, const ConvOptions& o, bool transposed) {
  std::string s = std::to_string(in) + ", " + std::to_string(out) + ", kernel_size=" +
                  std::to_string(k) + ", stride=" + std::to_string(o.stride) +
                  ", padding=" + std::to_string(o.padding);
  if (o.dilation != 1) s += ", dilation=" + std::to_string(o.dilation);
  if (transposed && o.output_padding) s += ", output_padding=" + std::to_string(o.output_padding);
  if (!o.bias) s += ", bias=false";
  return s;
}

}  // namespace

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int kernel, ConvOptions o, RngKey key)
    : Cloneable("Conv2d"), in_(in_channels), out_(out_channels), k_(kernel), o_(o) {
  check_options("Conv2d", in_, out_, k_, o_, false);
  register_parameter("weight", ops::empty({out_, in_, k_, k_}));  // [out, in, kh, kw]
  if (o_.bias) register_parameter("bias", ops::empty({out_}));
  reset_parameters(key);
}

int64_t Conv2d::output_size(int64_t in) const {
  return (in + 2 * o_.padding - o_.dilation * (k_ - 1) - 1) / o_.stride + 1;
}

void Conv2d::reset_parameters(RngKey key) {
  const char* w = has("weight_orig") ? "weight_orig" : "weight";
  init::default_weight_(get(w), init::key_for(key, "weight"));
  if (o_.bias) init::default_bias_(get("bias"), get(w), init::key_for(key, "bias"));
}

Tensor Conv2d::forward_impl(const Tensor& x) {
  GANTRY_CHECK(x.dim() == 4 && x.size(1) == in_, "Conv2d: expected input (N, ", in_,
               ", H, W), found ", x.shape().str());
  return ops::conv2d(x, get("weight"), o_.bias ? get("bias") : Tensor(), op_options(o_));
}

std::string Conv2d::extra_repr() const { return repr(in_, out_, k_, o_, false); }

ConvTranspose2d::ConvTranspose2d(int64_t in_channels, int64_t out_channels, int kernel,
                                 ConvOptions o, RngKey key)
    : Cloneable("ConvTranspose2d"), in_(in_channels), out_(out_channels), k_(kernel), o_(o) {
  check_options("ConvTranspose2d", in_, out_, k_, o_, true);
  register_parameter("weight", ops::empty({in_, out_, k_, k_}));  // [in, out, kh, kw]
  if (o_.bias) register_parameter("bias", ops::empty({out_}));
  reset_parameters(key);
}

int64_t ConvTranspose2d::output_size(int64_t in) const {
  return (in - 1) * o_.stride - 2 * o_.padding + o_.dilation * (k_ - 1) + o_.output_padding + 1;
}

void ConvTranspose2d::reset_parameters(RngKey key) {
  const char* w = has("weight_orig") ? "weight_orig" : "weight";
  init::default_weight_(get(w), init::key_for(key, "weight"));
  if (o_.bias) init::default_bias_(get("bias"), get(w), init::key_for(key, "bias"));
}

Tensor ConvTranspose2d::forward_impl(const Tensor& x) {
  GANTRY_CHECK(x.dim() == 4 && x.size(1) == in_, "ConvTranspose2d: expected input (N, ", in_,
               ", H, W), found ", x.shape().str());
  return ops::conv_transpose2d(x, get("weight"), o_.bias ? get("bias") : Tensor(), op_options(o_));
}

std::string ConvTranspose2d::extra_repr() const { return repr(in_, out_, k_, o_, true); }

}  // namespace gantry::nn
