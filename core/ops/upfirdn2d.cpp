// FIR up/down-sampling (StyleGAN2's upfirdn2d) and the resampling helpers built on it.
//
// Note [upfirdn2d]: y = down(fir(pad(up(x)))) per (N, C) plane, with
//   up(x)    zero insertion: x[i] lands at i * up, the up - 1 following pixels are 0;
//   pad      pad0 rows/columns before, pad1 after, in the upsampled grid (negative crops);
//   fir      2-D convolution with the filter f (kh, kw), scaled by gain; true convolution
//            (f flipped) unless flip_filter, exactly as StyleGAN2's _upfirdn2d_ref;
//   down     keep pixels 0, down, 2 down, ...
// so Ho = (H * up + pad0 + pad1 - kh) / down + 1. The map is linear in x, and its adjoint is
// another upfirdn2d: the filter flipped (flip_filter toggled), up and down swapped, and the
// pads pad0' = kh - pad0 - 1, pad1' = H * up - Ho * down + pad0 - up + 1, which gives back
// exactly H rows. The backward is written with the op itself, so gradients of every order
// are upfirdn2d's again (the adjoint of the adjoint has the original geometry). The filter is
// a constant (StyleGAN2's filters are fixed buffers): no gradient flows into it.
#include "core/ops/op_support.h"

namespace gantry::ops {

using detail::record;
using autograd::Node;

namespace {

Shape upfirdn2d_output_shape(const Shape& x, const Shape& f, const UpFirDnParams& p) {
  Shape out{x[0], x[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    const int64_t span = x[2 + i] * p.up[i] + p.pad0[i] + p.pad1[i] - f[i];
    out[2 + i] = span < 0 ? 0 : span / p.down[i] + 1;
  }
  return out;
}

// The adjoint's geometry (Note [upfirdn2d]) for input x_shape and output y_shape.
UpFirDnParams adjoint_params(const UpFirDnParams& p, const Shape& f, const Shape& x_shape,
                             const Shape& y_shape) {
  UpFirDnParams a;
  for (int i = 0; i < 2; ++i) {
    const int k = static_cast<int>(f[i]);
    const int in = static_cast<int>(x_shape[2 + i]), out = static_cast<int>(y_shape[2 + i]);
    a.up[i] = p.down[i];
    a.down[i] = p.up[i];
    a.pad0[i] = k - p.pad0[i] - 1;
    a.pad1[i] = in * p.up[i] - out * p.down[i] + p.pad0[i] - p.up[i] + 1;
  }
  a.flip_filter = !p.flip_filter;
  a.gain = p.gain;
  return a;
}

Tensor upfirdn2d_impl(const Tensor& x, const Tensor& f, const UpFirDnParams& p) {
  Tensor y = empty(upfirdn2d_output_shape(x.shape(), f.shape(), p), x.device());
  if (y.numel() > 0) {
    // Blocked in and out where the backend runs it so (Note [blocked activations] in core/storage.h).
    View yv = y.view();
    yv.layout = Layout::ChannelBlocked;
    y.set_layout(backend_for(x.device()).upfirdn2d(x.native_view(), f.view(), p, yv));
  }
  Shape xs = x.shape();
  record("UpFirDn2dBackward", y, {x}, {{f}}, [p, xs](const GradList& g, const GradList& s, const Node&) {
    const Tensor& filter = s[0];
    Tensor gx = upfirdn2d_impl(g[0], filter, adjoint_params(p, filter.shape(), xs, g[0].shape()));
    GANTRY_CHECK(gx.shape() == xs, "upfirdn2d backward: expected a gradient of shape ", xs.str(),
                 ", found ", gx.shape().str(), " (internal geometry error)");
    return GradList{gx};
  });
  return y;
}

}  // namespace

UpFirDnParams UpFirDn2dOptions::params() const {
  UpFirDnParams p;
  p.up[0] = p.up[1] = up;
  p.down[0] = p.down[1] = down;
  p.pad0[0] = pad_y0;
  p.pad1[0] = pad_y1;
  p.pad0[1] = pad_x0;
  p.pad1[1] = pad_x1;
  p.flip_filter = flip_filter;
  p.gain = gain;
  return p;
}

Tensor upfirdn2d(const Tensor& x, const Tensor& f, const UpFirDn2dOptions& o) {
  constexpr const char* op = "upfirdn2d";
  detail::check_f32_same_device(op, {&x, &f});
  detail::check_rank(op, "input (N, C, H, W)", x, 4);
  detail::check_rank(op, "filter (kh, kw)", f, 2);
  GANTRY_CHECK(!f.requires_grad(), op,
               ": expected a constant filter (no gradient flows into it), found one that requires grad");
  GANTRY_CHECK(o.up >= 1 && o.down >= 1, op, ": expected up >= 1 and down >= 1, found up ", o.up, ", down ",
               o.down);
  GANTRY_CHECK(f.size(0) >= 1 && f.size(1) >= 1, op, ": expected a non-empty filter, found ", f.shape().str());
  const UpFirDnParams p = o.params();
  const Shape out = upfirdn2d_output_shape(x.shape(), f.shape(), p);
  GANTRY_CHECK(x.size(2) >= 1 && x.size(3) >= 1 && out[2] >= 1 && out[3] >= 1, op, ": input ",
               x.shape().str(), " with up ", o.up, ", pads (x ", o.pad_x0, ", ", o.pad_x1, "; y ", o.pad_y0, ", ",
               o.pad_y1, ") leaves less than the filter ", f.shape().str());
  return upfirdn2d_impl(x, f, p);
}

Tensor fir_filter(const std::vector<float>& taps, Device device) {
  GANTRY_CHECK(!taps.empty(), "fir_filter: expected at least one tap, found none");
  double total = 0.0;
  for (float t : taps) total += t;
  GANTRY_CHECK(total != 0.0, "fir_filter: expected taps with a non-zero sum (they are normalised to 1)");
  const int64_t k = static_cast<int64_t>(taps.size());
  std::vector<float> f(static_cast<size_t>(k * k));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j)
      f[static_cast<size_t>(i * k + j)] = static_cast<float>(taps[i] * taps[j] / (total * total));
  return from_vector(f, Shape{k, k}, device);
}

// StyleGAN2's upsample2d: pads centre the filter on the zero-inserted grid so the image does
// not shift, and gain factor^2 restores the mean the inserted zeros diluted.
Tensor upsample2d(const Tensor& x, const Tensor& f, int factor) {
  detail::check_rank("upsample2d", "filter (kh, kw)", f, 2);
  GANTRY_CHECK(factor >= 1, "upsample2d: expected factor >= 1, found ", factor);
  const int fh = static_cast<int>(f.size(0)), fw = static_cast<int>(f.size(1));
  UpFirDn2dOptions o;
  o.up = factor;
  o.pad_x0 = (fw + factor - 1) / 2;
  o.pad_x1 = (fw - factor) / 2;
  o.pad_y0 = (fh + factor - 1) / 2;
  o.pad_y1 = (fh - factor) / 2;
  o.gain = static_cast<float>(factor * factor);
  return upfirdn2d(x, f, o);
}

// StyleGAN2's downsample2d: the filter low-passes before every factor-th pixel is kept.
Tensor downsample2d(const Tensor& x, const Tensor& f, int factor) {
  detail::check_rank("downsample2d", "filter (kh, kw)", f, 2);
  GANTRY_CHECK(factor >= 1, "downsample2d: expected factor >= 1, found ", factor);
  const int fh = static_cast<int>(f.size(0)), fw = static_cast<int>(f.size(1));
  UpFirDn2dOptions o;
  o.down = factor;
  o.pad_x0 = (fw - factor + 1) / 2;
  o.pad_x1 = (fw - factor) / 2;
  o.pad_y0 = (fh - factor + 1) / 2;
  o.pad_y1 = (fh - factor) / 2;
  return upfirdn2d(x, f, o);
}

}  // namespace gantry::ops
