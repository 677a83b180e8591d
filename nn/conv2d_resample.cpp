#include "nn/conv2d_resample.h"

#include <algorithm>

#include "base/error.h"
#include "core/ops/ops.h"

namespace gantry::nn {

Tensor conv2d_resample(const Tensor& x, const Tensor& w, const Tensor& f, int up, int down, int padding) {
  GANTRY_CHECK(up >= 1 && down >= 1 && (up == 1 || down == 1),
               "conv2d_resample: expected up >= 1, down >= 1, not both above 1, found up ", up, ", down ", down);
  GANTRY_CHECK(w.dim() == 4, "conv2d_resample: expected a weight (O, I, kh, kw), found ", w.shape().str());
  const int kh = static_cast<int>(w.size(2)), kw = static_cast<int>(w.size(3));
  if (up == 1 && down == 1) return ops::conv2d(x, w, {}, ops::Conv2dOptions::make(1, padding));
  GANTRY_CHECK(f.defined() && f.dim() == 2, "conv2d_resample: expected a FIR filter (fh, fw) for up ", up,
               " / down ", down, ", found ", f.defined() ? f.shape().str() : std::string("none"));
  const int fh = static_cast<int>(f.size(0)), fw = static_cast<int>(f.size(1));
  ops::UpFirDn2dOptions o;
  if (down > 1) {
    o.pad_x0 = padding + (fw - down + 1) / 2;
    o.pad_x1 = padding + (fw - down) / 2;
    o.pad_y0 = padding + (fh - down + 1) / 2;
    o.pad_y1 = padding + (fh - down) / 2;
    if (kh == 1 && kw == 1) {
      o.down = down;
      return ops::conv2d(ops::upfirdn2d(x, f, o), w);
    }
    return ops::conv2d(ops::upfirdn2d(x, f, o), w, {}, ops::Conv2dOptions::make(down, 0));
  }
  // Up-sampling: the pads StyleGAN2 gives the FIR after a stride-`up` transposed convolution,
  // which already widened the image by k - 1 (px0 -= kw - 1, px1 -= kw - up).
  int px0 = padding + (fw + up - 1) / 2 - (kw - 1), px1 = padding + (fw - up) / 2 - (kw - up);
  int py0 = padding + (fh + up - 1) / 2 - (kh - 1), py1 = padding + (fh - up) / 2 - (kh - up);
  GANTRY_CHECK(kh == kw, "conv2d_resample: expected a square kernel for up-sampling, found ", w.shape().str());
  // A transposed-convolution padding crops what both FIR pads would crop anyway.
  const int t = std::max(std::min(std::min(-px0, -px1), std::min(-py0, -py1)), 0);
  Tensor y = ops::conv_transpose2d(x, ops::transpose(w, 0, 1), {}, ops::Conv2dOptions::make(up, t));
  o.pad_x0 = px0 + t;
  o.pad_x1 = px1 + t;
  o.pad_y0 = py0 + t;
  o.pad_y1 = py1 + t;
  o.gain = static_cast<float>(up * up);
  return ops::upfirdn2d(y, f, o);
}

}  // namespace gantry::nn
