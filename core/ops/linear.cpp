#include "core/ops/op_support.h"

namespace gantry::ops {

using detail::record;
using autograd::Node;

namespace {

Tensor matmul_raw(const char* op, const Tensor& a, const Tensor& b, bool ta, bool tb,
                  const Tensor& bias) {
  Device device = detail::check_f32_same_device(op, {&a, &b, &bias});
  GANTRY_CHECK(a.dim() == 2 && b.dim() == 2, op, ": expected 2-D operands, found ",
               a.shape().str(), " and ", b.shape().str());
  int64_t m = ta ? a.size(1) : a.size(0), k = ta ? a.size(0) : a.size(1);
  int64_t kb = tb ? b.size(1) : b.size(0), n = tb ? b.size(0) : b.size(1);
  GANTRY_CHECK(k == kb, op, ": inner dimensions differ: ", a.shape().str(),
               ta ? " (transposed)" : "", " and ", b.shape().str(), tb ? " (transposed)" : "");
  GANTRY_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == n), op,
               ": expected bias of shape (", n, ",), found ", bias.shape().str());
  Tensor y = empty(Shape{m, n}, device);
  View bv = bias.defined() ? bias.view() : View{};
  backend_for(device).matmul(a.view(), b.view(), ta, tb, bias.defined() ? &bv : nullptr, y.view());
  return y;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  Tensor y = matmul_raw("matmul", a, b, ta, tb, {});
  record("MatmulBackward", y, {a, b}, {{a}, {b}}, [ta, tb](const GradList& g, const GradList& s, const Node& n) {
    const Tensor &a = s[0], &b = s[1];
    Tensor ga, gb;
    if (n.needs_input_grad(0)) ga = ta ? matmul(b, g[0], tb, true) : matmul(g[0], b, false, !tb);
    if (n.needs_input_grad(1)) gb = tb ? matmul(g[0], a, true, ta) : matmul(a, g[0], !ta, false);
    return GradList{ga, gb};
  });
  return y;
}

Tensor bmm(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  constexpr const char* op = "bmm";
  Device device = detail::check_f32_same_device(op, {&a, &b});
  GANTRY_CHECK(a.dim() == 3 && b.dim() == 3, op, ": expected 3-D operands (batch, rows, cols), found ",
               a.shape().str(), " and ", b.shape().str());
  GANTRY_CHECK(a.size(0) == b.size(0), op, ": batch sizes differ: ", a.shape().str(), " and ", b.shape().str());
  const int64_t m = ta ? a.size(2) : a.size(1), k = ta ? a.size(1) : a.size(2);
  const int64_t kb = tb ? b.size(2) : b.size(1), n = tb ? b.size(1) : b.size(2);
  GANTRY_CHECK(k == kb, op, ": inner dimensions differ: ", a.shape().str(), ta ? " (transposed)" : "", " and ",
               b.shape().str(), tb ? " (transposed)" : "");
  Tensor y = empty(Shape{a.size(0), m, n}, device);
  backend_for(device).bmm(a.view(), b.view(), ta, tb, y.view());
  // As matmul's: each gradient is a bmm of the other operand with the incoming gradient.
  record("BmmBackward", y, {a, b}, {{a}, {b}}, [ta, tb](const GradList& g, const GradList& s, const Node& n) {
    const Tensor &a = s[0], &b = s[1];
    Tensor ga, gb;
    if (n.needs_input_grad(0)) ga = ta ? bmm(b, g[0], tb, true) : bmm(g[0], b, false, !tb);
    if (n.needs_input_grad(1)) gb = tb ? bmm(g[0], a, true, ta) : bmm(a, g[0], !ta, false);
    return GradList{ga, gb};
  });
  return y;
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  GANTRY_CHECK(x.dim() >= 2 && w.dim() == 2 && x.size(-1) == w.size(1),
               "linear: expected input (..., in) and weight (out, in), found input ",
               x.shape().str(), " and weight ", w.shape().str());
  if (x.dim() > 2) {
    Shape out = x.shape();
    out[out.rank() - 1] = w.size(0);
    return reshape(linear(reshape(x, Shape{x.numel() / x.size(-1), x.size(-1)}), w, bias), out);
  }
  Tensor y = matmul_raw("linear", x, w, false, true, bias);
  record("LinearBackward", y, {x, w, bias}, {{x}, {w}}, [](const GradList& g, const GradList& s, const Node& n) {
    return GradList{n.needs_input_grad(0) ? matmul(g[0], s[1]) : Tensor(),
                      n.needs_input_grad(1) ? matmul(g[0], s[0], true, false) : Tensor(),
                      n.needs_input_grad(2) ? sum(g[0], {0}) : Tensor()};
  });
  return y;
}

}  // namespace gantry::ops
