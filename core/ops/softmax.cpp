// Softmax and log-softmax: backend kernels over the last dimension (another dimension is moved
// there and back), whose backward is a kernel and an op of its own, differentiable again.
#include "core/ops/op_support.h"

namespace gantry::ops {

using detail::record;
using autograd::Node;

namespace {

// Note [softmax derivatives]: with y = softmax(x) over each row, the backward
//   gx = B(y, gy) = y (gy - sum(gy y))
// is linear in gy and self-adjoint there, d<ggx, B(y, gy)>/dgy = B(y, ggx), and in y
//   d<ggx, B(y, gy)>/dy = ggx (gy - sum(gy y)) - gy sum(ggx y).
// With y = log_softmax(x) = x - logsumexp(x) the backward is
//   gx = L(y, gy) = gy - exp(y) sum(gy),
//   d<ggx, L>/dgy = ggx - sum(ggx exp(y)),   d<ggx, L>/dy = -ggx exp(y) sum(gy).
// B and L are one backend kernel (softmax_backward); their derivatives are that kernel again and
// ordinary ops, and y is the forward's output saved with its history, so the gradient reaching y
// goes on through the forward: every order of derivative is exact, and the gradient of a gradient
// (an R1 penalty through attention) costs a kernel and a few elementwise ops per softmax.
Tensor row_sums(const Tensor& t) { return sum(t, {-1}, /*keepdim=*/true); }

Tensor softmax_backward(const Tensor& y, const Tensor& gy, SoftmaxKind kind) {
  Tensor gx = empty(y.shape(), y.device());
  detail::backend_of(y).softmax_backward(y.view(), gy.view(), kind, gx.view());
  const char* name = kind == SoftmaxKind::Softmax ? "SoftmaxBackwardBackward" : "LogSoftmaxBackwardBackward";
  record(name, gx, {y, gy}, {{y}, {gy}}, [kind](const GradList& g, const GradList& s, const Node& n) {
    const Tensor &y = s[0], &gy = s[1], &ggx = g[0];
    Tensor grad_y, grad_gy;
    if (kind == SoftmaxKind::Softmax) {
      if (n.needs_input_grad(0)) grad_y = sub(mul(ggx, sub(gy, row_sums(mul(gy, y)))), mul(gy, row_sums(mul(ggx, y))));
      if (n.needs_input_grad(1)) grad_gy = softmax_backward(y, ggx, kind);
    } else {
      Tensor p = exp(y);
      if (n.needs_input_grad(0)) grad_y = neg(mul(mul(ggx, p), row_sums(gy)));
      if (n.needs_input_grad(1)) grad_gy = sub(ggx, row_sums(mul(ggx, p)));
    }
    return GradList{grad_y, grad_gy};
  });
  return gx;
}

Tensor softmax_last_dim(const Tensor& x, SoftmaxKind kind) {
  Tensor y = empty(x.shape(), x.device());
  detail::backend_of(x).softmax(x.view(), kind, y.view());
  const char* name = kind == SoftmaxKind::Softmax ? "SoftmaxBackward" : "LogSoftmaxBackward";
  record(name, y, {x}, {{y, true}}, [kind](const GradList& g, const GradList& s, const Node&) {
    return GradList{softmax_backward(s[0], g[0], kind)};
  });
  return y;
}

Tensor softmax_along(const char* op, const Tensor& x, int dim, SoftmaxKind kind) {
  detail::check_f32_same_device(op, {&x});
  GANTRY_CHECK(x.dim() >= 1, op, ": expected a tensor of rank >= 1, found a scalar");
  const int d = normalize_dim(dim, x.dim(), op);
  GANTRY_CHECK(x.size(d) >= 1, op, ": expected dimension ", dim, " of at least 1 element, found ", x.shape().str());
  if (d == x.dim() - 1) return softmax_last_dim(x, kind);
  return transpose(softmax_last_dim(transpose(x, d, -1), kind), d, -1);
}

}  // namespace

Tensor softmax(const Tensor& x, int dim) { return softmax_along("softmax", x, dim, SoftmaxKind::Softmax); }

Tensor log_softmax(const Tensor& x, int dim) { return softmax_along("log_softmax", x, dim, SoftmaxKind::LogSoftmax); }

}  // namespace gantry::ops
