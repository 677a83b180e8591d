// Bilinear resize (PyTorch's interpolate with align_corners=False) and its adjoint.
#include "core/ops/op_support.h"

namespace gantry::ops {

using detail::record;
using autograd::Node;

namespace {

Tensor resize_backward(const Tensor& gy, const Shape& x_shape);

// The resize and its adjoint are linear maps adjoint to each other, so each one's backward is
// the other (as for average pooling): second derivatives come for free.
Tensor resize_forward(const Tensor& x, int64_t out_h, int64_t out_w) {
  Tensor y = empty(Shape{x.size(0), x.size(1), out_h, out_w}, x.device());
  backend_for(x.device()).resize_bilinear_forward(x.view(), y.view());
  Shape xs = x.shape();
  record("ResizeBilinearBackward", y, {x}, {}, [xs](const GradList& g, const GradList&, const Node&) {
    return GradList{resize_backward(g[0], xs)};
  });
  return y;
}

Tensor resize_backward(const Tensor& gy, const Shape& x_shape) {
  Tensor gx = empty(x_shape, gy.device());
  backend_for(gy.device()).resize_bilinear_backward(gy.view(), gx.view());
  const int64_t out_h = gy.size(2), out_w = gy.size(3);
  record("ResizeBilinearBackwardBackward", gx, {gy}, {},
         [out_h, out_w](const GradList& g, const GradList&, const Node&) {
           return GradList{resize_forward(g[0], out_h, out_w)};
         });
  return gx;
}

}  // namespace

Tensor resize_bilinear(const Tensor& x, int64_t out_h, int64_t out_w) {
  detail::check_f32_same_device("resize_bilinear", {&x});
  detail::check_rank("resize_bilinear", "input (N, C, H, W)", x, 4);
  GANTRY_CHECK(out_h >= 1 && out_w >= 1, "resize_bilinear: expected an output size >= 1x1, found ", out_h, "x",
               out_w);
  GANTRY_CHECK(x.size(2) >= 1 && x.size(3) >= 1, "resize_bilinear: expected a non-empty image, found ",
               x.shape().str());
  if (x.size(0) == 0 || x.size(1) == 0) return empty(Shape{x.size(0), x.size(1), out_h, out_w}, x.device());
  return resize_forward(x, out_h, out_w);
}

}  // namespace gantry::ops
