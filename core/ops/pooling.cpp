#include "core/ops/op_support.h"

namespace gantry::ops {

using detail::record;
using autograd::Node;

namespace {

PoolParams make_params(const char* op, PoolKind kind, int kernel, int stride, int padding) {
  GANTRY_CHECK(kernel >= 1 && stride >= 1 && padding >= 0 && 2 * padding <= kernel, op,
               ": expected kernel >= 1, stride >= 1 and 0 <= padding <= kernel / 2, found kernel ",
               kernel, ", stride ", stride, ", padding ", padding);
  PoolParams p;
  p.kind = kind;
  for (int i = 0; i < 2; ++i) {
    p.kernel[i] = kernel;
    p.stride[i] = stride;
    p.padding[i] = padding;
  }
  return p;
}

Shape pool_output_shape(const char* op, const Tensor& x, const PoolParams& p) {
  detail::check_f32_same_device(op, {&x});
  detail::check_rank(op, "input (N, C, H, W)", x, 4);
  Shape out{x.size(0), x.size(1), 0, 0};
  for (int i = 0; i < 2; ++i) out[2 + i] = (x.size(2 + i) + 2 * p.padding[i] - p.kernel[i]) / p.stride[i] + 1;
  GANTRY_CHECK(out[2] > 0 && out[3] > 0, op, ": input ", x.shape().str(), " is smaller than the kernel");
  return out;
}

Tensor avg_pool_backward(const Tensor& gy, const PoolParams& p, const Shape& x_shape);

// Avg pooling and its backward are linear maps adjoint to each other, so each one's backward
// is the other.
Tensor avg_pool_forward(const Tensor& x, const PoolParams& p) {
  Tensor y = empty(pool_output_shape("avg_pool2d", x, p), x.device());
  backend_for(x.device()).pool2d_forward(p, x.view(), y.view(), nullptr);
  Shape xs = x.shape();
  record("AvgPool2dBackward", y, {x}, {}, [p, xs](const GradList& g, const GradList&, const Node&) {
    return GradList{avg_pool_backward(g[0], p, xs)};
  });
  return y;
}

Tensor avg_pool_backward(const Tensor& gy, const PoolParams& p, const Shape& x_shape) {
  Tensor gx = empty(x_shape, gy.device());
  backend_for(gy.device()).pool2d_backward(p, gy.view(), nullptr, gx.view());
  record("AvgPool2dBackwardBackward", gx, {gy}, {}, [p](const GradList& g, const GradList&, const Node&) {
    return GradList{avg_pool_forward(g[0], p)};
  });
  return gx;
}

}  // namespace

Tensor avg_pool2d(const Tensor& x, int kernel, int stride, int padding, bool count_include_pad) {
  PoolParams p = make_params("avg_pool2d", PoolKind::Avg, kernel, stride, padding);
  p.count_include_pad = count_include_pad;
  return avg_pool_forward(x, p);
}

Tensor max_pool2d(const Tensor& x, int kernel, int stride, int padding) {
  PoolParams p = make_params("max_pool2d", PoolKind::Max, kernel, stride, padding);
  Tensor y = empty(pool_output_shape("max_pool2d", x, p), x.device());
  Backend& be = backend_for(x.device());
  if (!autograd::any_requires_grad({x})) {  // inference (e.g. feature networks): no argmax kept
    be.pool2d_forward(p, x.view(), y.view(), nullptr);
    return y;
  }
  size_t ws_bytes = be.pool_workspace_bytes(p, x.view(), y.view());
  Tensor ws = empty(Shape{static_cast<int64_t>(ws_bytes)}, x.device(), DType::U8);
  View wv = ws.view();
  be.pool2d_forward(p, x.view(), y.view(), &wv);
  Shape xs = x.shape();
  record("MaxPool2dBackward", y, {x}, {{ws}}, [p, xs](const GradList& g, const GradList& s, const Node&) {
    Tensor gx = empty(xs, g[0].device());
    View wv = s[0].view();
    backend_for(g[0].device()).pool2d_backward(p, g[0].view(), &wv, gx.view());
    detail::record_not_twice_differentiable("MaxPool2dBackward", {&gx}, {g[0]});
    return GradList{gx};
  });
  return y;
}

}  // namespace gantry::ops
