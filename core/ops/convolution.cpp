// conv2d and conv_transpose2d on three primitives: forward, backward-data, backward-weights.
//
// Note [second derivatives of convolution]: y = conv(x, w) is bilinear, and so are its two
// backward maps, which closes the set under differentiation:
//   dx = conv_bwd_data(gy, w),  dw = conv_bwd_weights(x, gy);
// for a gradient gdx flowing into dx: d/dgy = conv(gdx, w), d/dw = conv_bwd_weights(gdx, gy);
// for gdw flowing into dw:            d/dgy = conv(x, gdw),  d/dx = conv_bwd_data(gy, gdw).
// Transposed convolution swaps the roles of forward and backward-data; matmul is the same story
// with transposes. So three primitives per op family, each with a differentiable backward written
// in the other two, give exact gradient penalties (WGAN-GP, R1, path length) with no special case.
// (DESIGN.md states the same rule.)
//
// Note [grouped convolution]: with groups = g (ConvParams::groups, as torch's conv2d), input and
// output channels are cut into g equal slices and output slice k reads input slice k only: the
// weight is (O, I / g, kh, kw), which is also the dense weight of one slice pair. The three
// primitives take g as a parameter (oneDNN's grouped goihw weights, the same memory as OIHW;
// cuDNN's group count), so a grouped layer is one library call in each direction; the rule above
// holds unchanged because each primitive's adjoint is the other primitive with the same groups.
// conv_transpose2d's weight is (I, O / g, kh, kw), as torch's ConvTranspose2d.
#include "core/ops/op_support.h"

namespace gantry::ops {

using detail::record;
using autograd::Node;

Conv2dOptions Conv2dOptions::make(int stride, int padding, int dilation, int output_padding) {
  Conv2dOptions o;
  for (int i = 0; i < 2; ++i) {
    o.stride[i] = stride;
    o.padding[i] = padding;
    o.dilation[i] = dilation;
    o.output_padding[i] = output_padding;
  }
  return o;
}

ConvParams Conv2dOptions::params() const {
  ConvParams p;
  for (int i = 0; i < 2; ++i) {
    GANTRY_CHECK(stride[i] >= 1 && dilation[i] >= 1 && padding[i] >= 0 && output_padding[i] >= 0,
                 "conv2d: expected stride >= 1, dilation >= 1, padding >= 0 and output_padding "
                 ">= 0, found stride ", stride[i], ", dilation ", dilation[i], ", padding ",
                 padding[i], ", output_padding ", output_padding[i]);
    p.stride[i] = stride[i];
    p.padding[i] = padding[i];
    p.dilation[i] = dilation[i];
  }
  GANTRY_CHECK(groups >= 1, "conv2d: expected groups >= 1, found ", groups);
  p.groups = groups;
  return p;
}

namespace {

int64_t conv_out(int64_t in, int64_t k, const ConvParams& p, int i) {
  return (in + 2 * p.padding[i] - p.dilation[i] * (k - 1) - 1) / p.stride[i] + 1;
}

// Checks x (N, C, H, W) against w (O, C / groups, kh, kw) and returns the conv output shape.
Shape conv_output_shape(const char* op, const Shape& x, const Shape& w, const ConvParams& p) {
  GANTRY_CHECK(x.rank() == 4 && w.rank() == 4 && x[1] == w[1] * p.groups && w[0] % p.groups == 0, op,
               ": expected input (N, C, H, W) and weight (O, C / groups, kh, kw) with O a multiple of "
               "groups = ", p.groups, ", found input ", x.str(), " and weight ", w.str());
  // oneDNN and cuDNN both reject a 0 dimension here (an empty batch is fine)
  GANTRY_CHECK(x[1] > 0 && w[0] > 0, op, ": expected at least one input and one output channel, "
               "found input ", x.str(), " and weight ", w.str());
  int64_t ho = conv_out(x[2], w[2], p, 0), wo = conv_out(x[3], w[3], p, 1);
  GANTRY_CHECK(ho > 0 && wo > 0, op, ": input ", x.str(), " is too small for weight ", w.str(),
               " (output would be ", ho, " x ", wo, ")");
  return Shape{x[0], w[0], ho, wo};
}

// An activation output the backend may write blocked, in f32 or bf16 (Note [blocked
// activations], Note [bf16 activations] in core/storage.h); the caller records what it wrote with
// set_layout.
View blockable_output(const Tensor& t) {
  View v = t.view();
  v.layout = Layout::ChannelBlockedBf16;
  return v;
}

void check_bias(const char* op, const Tensor& bias, int64_t channels) {
  if (!bias.defined()) return;
  GANTRY_CHECK(bias.dim() == 1 && bias.size(0) == channels, op, ": expected bias of shape (",
               channels, ",), found ", bias.shape().str());
}

Tensor conv_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvParams& p) {
  Device device = detail::check_f32_same_device("conv2d", {&x, &w, &bias});
  Shape out = conv_output_shape("conv2d", x.shape(), w.shape(), p);
  check_bias("conv2d", bias, w.size(0));
  Tensor y = empty(out, device);
  View bias_view = bias.defined() ? bias.view() : View{};
  y.set_layout(backend_for(device).conv2d_forward(
      x.native_view(true), w.view(), bias.defined() ? &bias_view : nullptr, p, blockable_output(y)));
  Shape xs = x.shape(), ws = w.shape();
  record("Conv2dBackward", y, {x, w, bias}, {{x}, {w}},
         [p, xs, ws](const GradList& g, const GradList& s, const Node& n) {
           return GradList{
               n.needs_input_grad(0) ? conv2d_backward_data(g[0], s[1], xs, p) : Tensor(),
               n.needs_input_grad(1) ? conv2d_backward_weights(s[0], g[0], ws, p) : Tensor(),
               n.needs_input_grad(2) ? sum(g[0], {0, 2, 3}) : Tensor()};
         });
  return y;
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o) {
  GANTRY_CHECK(o.output_padding[0] == 0 && o.output_padding[1] == 0,
               "conv2d: output_padding applies to conv_transpose2d only");
  return conv_forward(x, w, bias, o.params());
}

Tensor conv2d_backward_data(const Tensor& gy, const Tensor& w, const Shape& x_shape,
                            const ConvParams& p) {
  Device device = detail::check_f32_same_device("conv2d_backward_data", {&gy, &w});
  Shape expected = conv_output_shape("conv2d_backward_data", x_shape, w.shape(), p);
  GANTRY_CHECK(gy.shape() == expected, "conv2d_backward_data: expected gradient of shape ",
               expected.str(), " for input ", x_shape.str(), " and weight ", w.shape().str(),
               ", found ", gy.shape().str());
  Tensor gx = empty(x_shape, device);
  gx.set_layout(
      backend_for(device).conv2d_backward_data(gy.native_view(true), w.view(), p, blockable_output(gx)));
  Shape ws = w.shape();
  record("Conv2dBackwardDataBackward", gx, {gy, w}, {{gy}, {w}},
         [p, ws](const GradList& g, const GradList& s, const Node& n) {
           return GradList{
               n.needs_input_grad(0) ? conv_forward(g[0], s[1], {}, p) : Tensor(),
               n.needs_input_grad(1) ? conv2d_backward_weights(g[0], s[0], ws, p) : Tensor()};
         });
  return gx;
}

Tensor conv2d_backward_weights(const Tensor& x, const Tensor& gy, const Shape& w_shape,
                               const ConvParams& p) {
  Device device = detail::check_f32_same_device("conv2d_backward_weights", {&x, &gy});
  Shape expected = conv_output_shape("conv2d_backward_weights", x.shape(), w_shape, p);
  GANTRY_CHECK(gy.shape() == expected, "conv2d_backward_weights: expected gradient of shape ",
               expected.str(), " for input ", x.shape().str(), " and weight ", w_shape.str(),
               ", found ", gy.shape().str());
  Tensor gw = empty(w_shape, device);
  backend_for(device).conv2d_backward_weights(x.native_view(true), gy.native_view(true), p, gw.view());
  Shape xs = x.shape();
  record("Conv2dBackwardWeightsBackward", gw, {x, gy}, {{x}, {gy}},
         [p, xs](const GradList& g, const GradList& s, const Node& n) {
           return GradList{
               n.needs_input_grad(0) ? conv2d_backward_data(s[1], g[0], xs, p) : Tensor(),
               n.needs_input_grad(1) ? conv_forward(s[0], g[0], {}, p) : Tensor()};
         });
  return gw;
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& bias,
                        const Conv2dOptions& o) {
  ConvParams p = o.params();
  GANTRY_CHECK(x.dim() == 4 && w.dim() == 4 && x.size(1) == w.size(0) && w.size(0) % p.groups == 0,
               "conv_transpose2d: expected input (N, C, H, W) and weight (C, O / groups, kh, kw) "
               "with equal C, a multiple of groups = ", p.groups, ", found input ", x.shape().str(),
               " and weight ", w.shape().str());
  for (int i = 0; i < 2; ++i)
    GANTRY_CHECK(o.output_padding[i] < std::max(o.stride[i], o.dilation[i]),
                 "conv_transpose2d: output_padding ", o.output_padding[i],
                 " must be smaller than stride or dilation");
  // The transposed conv is the backward-data map of the conv whose weight is w, when the conv's
  // size formula maps the output size back to the input size (always so for output_padding <
  // stride).
  const int64_t out_channels = w.size(1) * p.groups;
  Shape out{x.size(0), out_channels, 0, 0};
  bool direct = true;
  for (int i = 0; i < 2; ++i) {
    out[2 + i] = (x.size(2 + i) - 1) * p.stride[i] - 2 * p.padding[i] +
                 p.dilation[i] * (w.size(2 + i) - 1) + o.output_padding[i] + 1;
    direct = direct && conv_out(out[2 + i], w.size(2 + i), p, i) == x.size(2 + i);
  }
  GANTRY_CHECK(out[2] > 0 && out[3] > 0, "conv_transpose2d: output would be empty for input ",
               x.shape().str(), " and weight ", w.shape().str());
  check_bias("conv_transpose2d", bias, out_channels);
  Tensor y;
  if (direct) {
    y = conv2d_backward_data(x, w, out, p);
  } else {
    // output_padding >= stride (allowed below the dilation): the full, unpadded map, then the
    // window [padding, padding + size) of it, zero-extended where it runs past the end.
    ConvParams unpadded = p;
    unpadded.padding[0] = unpadded.padding[1] = 0;
    Shape full{x.size(0), out_channels, 0, 0};
    for (int i = 0; i < 2; ++i)
      full[2 + i] = (x.size(2 + i) - 1) * p.stride[i] + p.dilation[i] * (w.size(2 + i) - 1) + 1;
    y = conv2d_backward_data(x, w, full, unpadded);
    for (int i = 0; i < 2; ++i) {
      const int64_t begin = p.padding[i], end = begin + out[2 + i];
      const int64_t past = std::max<int64_t>(0, end - full[2 + i]);
      y = slice(y, 2 + i, begin, end - past);
      if (past) y = pad(y, i == 0 ? std::vector<int64_t>{0, 0, 0, past} : std::vector<int64_t>{0, past});
    }
  }
  if (bias.defined()) y = add(y, reshape(bias, Shape{1, out_channels, 1, 1}));
  return y;
}

}  // namespace gantry::ops
