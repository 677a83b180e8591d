// Elementwise ops. Backward formulas use only differentiable ops (so create_graph works);
// masks (relu, clamp, leaky slope) are computed without history: their derivative is 0 a.e.
#include "core/ops/op_support.h"

namespace gantry::ops {

using detail::record;
using detail::Save;
using autograd::Node;

namespace {

// Elementwise maps do not care how elements are ordered, so a blocked input gives a blocked
// output (Note [blocked activations] in core/storage.h); a bf16 one is read as such, and the
// output is f32 (Note [bf16 activations]) except under Bf16Output::KeepForActivation.
Layout f32_layout(Layout layout) { return layout == Layout::Plain ? Layout::Plain : Layout::ChannelBlocked; }

// An activation function of a bf16 activation, and the gradient through it when that gradient
// arrives in bf16, stay bf16, as under autocast (Note [bf16 activations] in core/storage.h): they
// go on to a convolution, which would round them to bf16 itself (ReLU's need no rounding at all).
enum class Bf16Output { No, KeepForActivation };

// The layout an elementwise op writes for inputs in `in` (all of one f32 layout).
Layout output_layout(std::initializer_list<Layout> in, Bf16Output keep) {
  bool bf16 = false;
  for (Layout l : in) bf16 = bf16 || l == Layout::ChannelBlockedBf16;
  return bf16 && keep == Bf16Output::KeepForActivation ? Layout::ChannelBlockedBf16 : f32_layout(*in.begin());
}

Tensor unary_raw(const char* op, const Tensor& x, UnaryOp kind, float alpha = 0.f, float beta = 0.f,
                 Bf16Output keep = Bf16Output::No) {
  detail::check_f32_same_device(op, {&x});
  Tensor y = empty(x.shape(), x.device());
  const View xv = x.native_view(true);
  View yv = y.view();
  yv.layout = output_layout({xv.layout}, keep);
  detail::backend_of(x).unary(UnaryFn{kind, alpha, beta}, xv, yv);
  y.set_layout(yv.layout);
  return y;
}

// Whether `small` broadcasts over a blocked tensor of shape `out` as the CPU backend's blocked
// loops take it (Note [blocked broadcast] in backend/cpu/cpu_backend.cpp): 4-D, per channel
// (N|1, C|1, 1, 1) or per pixel (N|1, 1, H, W).
bool broadcasts_per_channel_or_pixel(const Shape& small, const Shape& out) {
  if (small.rank() != 4 || out.rank() != 4) return false;
  for (int d = 0; d < 4; ++d)
    if (small[d] != 1 && small[d] != out[d]) return false;
  const bool per_channel = small[2] == 1 && small[3] == 1;
  const bool per_pixel = small[1] == 1 && small[2] == out[2] && small[3] == out[3];
  return per_channel || per_pixel;
}

// The same holds for two blocked inputs of one shape, and for a blocked input with a per-channel
// or per-pixel operand; anything else runs plain.
Tensor binary_raw(const char* op, const Tensor& a, const Tensor& b, BinaryOp kind, Bf16Output keep = Bf16Output::No) {
  Device device = detail::check_f32_same_device(op, {&a, &b});
  Tensor y = empty(broadcast_shapes(op, a.shape(), b.shape()), device);
  if (a.shape() == b.shape()) {
    const View av = a.native_view(true), bv = b.native_view(true);
    if (f32_layout(av.layout) == f32_layout(bv.layout)) {
      View yv = y.view();
      yv.layout = output_layout({av.layout, bv.layout}, keep);
      detail::backend_of(a).binary(BinaryFn{kind}, av, bv, yv);
      y.set_layout(yv.layout);
      return y;
    }
  } else if (a.shape() == y.shape() || b.shape() == y.shape()) {
    const bool a_full = a.shape() == y.shape();
    const View av = a.native_view(), bv = b.native_view();
    const View& full = a_full ? av : bv;
    if (full.layout == Layout::ChannelBlocked && broadcasts_per_channel_or_pixel((a_full ? b : a).shape(), y.shape())) {
      View yv = y.view();
      yv.layout = Layout::ChannelBlocked;
      detail::backend_of(a).binary(BinaryFn{kind}, av, bv, yv);
      y.set_layout(Layout::ChannelBlocked);
      return y;
    }
  }
  detail::backend_of(a).binary(BinaryFn{kind}, a.view(), b.view(), y.view());
  return y;
}

// Mask of a tensor, computed without history.
Tensor mask(const Tensor& x, UnaryOp kind, float alpha, float beta = 0.f) {
  NoGradGuard no_grad;
  return unary_raw("mask", x, kind, alpha, beta);
}

bool need(const Node& n, int i) { return n.needs_input_grad(i); }

// g * act'(x) for an activation's derivative `slope_mask` (no history): bf16 when g is
// (Bf16Output above), and differentiable in g for double backward.
Tensor through_activation(const Tensor& g, const Tensor& slope_mask) {
  Tensor y = binary_raw("mul", g, slope_mask, BinaryOp::Mul, Bf16Output::KeepForActivation);
  record("ActivationBackward", y, {g}, {{slope_mask}}, [](const GradList& gg, const GradList& s, const Node&) {
    return GradList{through_activation(gg[0], s[0])};
  });
  return y;
}

// Note [activation derivatives]: SiLU's and GELU's backward multiplies by their derivative, a
// functor of its own (one pass), and that derivative's backward by the second derivative, another
// functor: an exact R1 penalty through a network (the gradient of a gradient) then costs one pass
// per activation at either order. The third derivative, which training never asks for, is
// composed of differentiable ops, so every order still works.
struct DerivativeChain {
  const char* name;                  // of the first derivative's op, for errors
  UnaryOp first, second;             // f' and f''
  Tensor (*third)(const Tensor& x);  // f''' as differentiable ops
};

// f' (order 1) or f'' (order 2) of x; its backward multiplies by the next derivative.
Tensor chain_derivative(const DerivativeChain& chain, const Tensor& x, int order) {
  Tensor y = unary_raw(chain.name, x, order == 1 ? chain.first : chain.second);
  record("ActivationDerivativeBackward", y, {x}, {{x}}, [&chain, order](const GradList& g, const GradList& s, const Node&) {
    return GradList{mul(g[0], order == 1 ? chain_derivative(chain, s[0], 2) : chain.third(s[0]))};
  });
  return y;
}

// silu''' = q ((1 - 2 s) (3 + x (1 - 2 s)) - 2 x q), s = sigmoid(x), q = s (1 - s)
Tensor silu_third_derivative(const Tensor& x) {
  Tensor s = sigmoid(x), one_minus_s = sigmoid(neg(x));  // 1 - s without cancellation
  Tensor q = mul(s, one_minus_s), r = sub(one_minus_s, s);
  return mul(q, sub(mul(r, add(mul(x, r), 3.f)), mul(mul(x, q), 2.f)));
}

// gelu''' = p (h' - 2 t u' h), with s = sigmoid(2u), t = tanh(u) = 2 s - 1, p = 1 - t^2 = 4 s (1 - s),
// u' and u'' = 6 beta kappa x as in backend/functors.h, h = gelu'' / p = u' - x t u'^2 + 3 beta kappa x^2
// and h' = 12 beta kappa x - t u'^2 - x p u'^3 - 12 beta kappa x^2 t u'.
Tensor gelu_tanh_third_derivative(const Tensor& x) {
  const float bk = kGeluBeta * kGeluKappa;
  Tensor x2 = square(x);
  Tensor two_u = mul(add(mul(mul(x2, x), kGeluKappa), x), 2.f * kGeluBeta);
  Tensor s = sigmoid(two_u), one_minus_s = sigmoid(neg(two_u));  // 1 - s without cancellation
  Tensor t = sub(s, one_minus_s), p = mul(mul(s, one_minus_s), 4.f);
  Tensor slope = add(mul(x2, 3.f * bk), kGeluBeta);  // u'
  Tensor slope2 = square(slope), xt = mul(x, t);
  Tensor h = add(sub(slope, mul(xt, slope2)), mul(x2, 3.f * bk));
  Tensor dh = sub(sub(sub(mul(x, 12.f * bk), mul(t, slope2)), mul(mul(x, p), mul(slope2, slope))),
                  mul(mul(xt, slope), mul(x, 12.f * bk)));
  return mul(p, sub(dh, mul(mul(t, slope), mul(h, 2.f))));
}

const DerivativeChain kSiluChain{"silu_derivative", UnaryOp::SiluDerivative, UnaryOp::SiluSecondDerivative,
                                 silu_third_derivative};
const DerivativeChain kGeluTanhChain{"gelu_tanh_derivative", UnaryOp::GeluTanhDerivative,
                                     UnaryOp::GeluTanhSecondDerivative, gelu_tanh_third_derivative};

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor y = binary_raw("add", a, b, BinaryOp::Add);
  Shape sa = a.shape(), sb = b.shape();
  record("AddBackward", y, {a, b}, {}, [sa, sb](const GradList& g, const GradList&, const Node& n) {
    return GradList{need(n, 0) ? sum_to(g[0], sa) : Tensor(), need(n, 1) ? sum_to(g[0], sb) : Tensor()};
  });
  return y;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor y = binary_raw("sub", a, b, BinaryOp::Sub);
  Shape sa = a.shape(), sb = b.shape();
  record("SubBackward", y, {a, b}, {}, [sa, sb](const GradList& g, const GradList&, const Node& n) {
    return GradList{need(n, 0) ? sum_to(g[0], sa) : Tensor(),
                      need(n, 1) ? sum_to(neg(g[0]), sb) : Tensor()};
  });
  return y;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor y = binary_raw("mul", a, b, BinaryOp::Mul);
  record("MulBackward", y, {a, b}, {{a}, {b}}, [](const GradList& g, const GradList& s, const Node& n) {
    return GradList{need(n, 0) ? sum_to(mul(g[0], s[1]), s[0].shape()) : Tensor(),
                      need(n, 1) ? sum_to(mul(g[0], s[0]), s[1].shape()) : Tensor()};
  });
  return y;
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor y = binary_raw("div", a, b, BinaryOp::Div);
  record("DivBackward", y, {a, b}, {{a}, {b}}, [](const GradList& g, const GradList& s, const Node& n) {
    const Tensor &a = s[0], &b = s[1];
    return GradList{need(n, 0) ? sum_to(div(g[0], b), a.shape()) : Tensor(),
                      need(n, 1) ? sum_to(neg(div(mul(g[0], a), square(b))), b.shape()) : Tensor()};
  });
  return y;
}

Tensor maximum(const Tensor& a, const Tensor& b) {
  Tensor y = binary_raw("maximum", a, b, BinaryOp::Maximum);
  record("MaximumBackward", y, {a, b}, {{a}, {b}}, [](const GradList& g, const GradList& s, const Node& n) {
    Tensor pick_a = ge(s[0], s[1]);  // ties go to a, as torch.maximum's subgradient choice
    return GradList{need(n, 0) ? sum_to(mul(g[0], pick_a), s[0].shape()) : Tensor(),
                      need(n, 1) ? sum_to(mul(g[0], rsub(pick_a, 1.f)), s[1].shape()) : Tensor()};
  });
  return y;
}

Tensor minimum(const Tensor& a, const Tensor& b) {
  Tensor y = binary_raw("minimum", a, b, BinaryOp::Minimum);
  record("MinimumBackward", y, {a, b}, {{a}, {b}}, [](const GradList& g, const GradList& s, const Node& n) {
    Tensor pick_a = le(s[0], s[1]);
    return GradList{need(n, 0) ? sum_to(mul(g[0], pick_a), s[0].shape()) : Tensor(),
                      need(n, 1) ? sum_to(mul(g[0], rsub(pick_a, 1.f)), s[1].shape()) : Tensor()};
  });
  return y;
}

Tensor add(const Tensor& a, float s) {
  Tensor y = unary_raw("add", a, UnaryOp::AddScalar, s);
  record("AddScalarBackward", y, {a}, {}, [](const GradList& g, const GradList&, const Node&) {
    return GradList{g[0]};
  });
  return y;
}

Tensor mul(const Tensor& a, float s) {
  Tensor y = unary_raw("mul", a, UnaryOp::MulScalar, s);
  record("MulScalarBackward", y, {a}, {}, [s](const GradList& g, const GradList&, const Node&) {
    return GradList{mul(g[0], s)};
  });
  return y;
}

Tensor rsub(const Tensor& a, float s) {
  Tensor y = unary_raw("rsub", a, UnaryOp::Affine, -1.f, s);
  record("RsubBackward", y, {a}, {}, [](const GradList& g, const GradList&, const Node&) {
    return GradList{neg(g[0])};
  });
  return y;
}

Tensor neg(const Tensor& x) {
  Tensor y = unary_raw("neg", x, UnaryOp::Neg);
  record("NegBackward", y, {x}, {}, [](const GradList& g, const GradList&, const Node&) {
    return GradList{neg(g[0])};
  });
  return y;
}

Tensor pow(const Tensor& x, float p) {
  Tensor y = unary_raw("pow", x, UnaryOp::Pow, p);
  record("PowBackward", y, {x}, {{x}}, [p](const GradList& g, const GradList& s, const Node&) {
    if (p == 0.f) return GradList{zeros_like(g[0])};
    return GradList{mul(g[0], mul(pow(s[0], p - 1.f), p))};
  });
  return y;
}

Tensor sqrt(const Tensor& x) {
  Tensor y = unary_raw("sqrt", x, UnaryOp::Sqrt);
  record("SqrtBackward", y, {x}, {{y, true}}, [](const GradList& g, const GradList& s, const Node&) {
    return GradList{div(mul(g[0], 0.5f), s[0])};
  });
  return y;
}

Tensor rsqrt(const Tensor& x) {
  Tensor y = unary_raw("rsqrt", x, UnaryOp::Rsqrt);
  record("RsqrtBackward", y, {x}, {{y, true}}, [](const GradList& g, const GradList& s, const Node&) {
    return GradList{mul(g[0], mul(pow(s[0], 3.f), -0.5f))};
  });
  return y;
}

Tensor square(const Tensor& x) {
  Tensor y = unary_raw("square", x, UnaryOp::Square);
  record("SquareBackward", y, {x}, {{x}}, [](const GradList& g, const GradList& s, const Node&) {
    return GradList{mul(g[0], mul(s[0], 2.f))};
  });
  return y;
}

Tensor reciprocal(const Tensor& x) {
  Tensor y = unary_raw("reciprocal", x, UnaryOp::Reciprocal);
  record("ReciprocalBackward", y, {x}, {{y, true}}, [](const GradList& g, const GradList& s, const Node&) {
    return GradList{neg(mul(g[0], square(s[0])))};
  });
  return y;
}

Tensor exp(const Tensor& x) {
  Tensor y = unary_raw("exp", x, UnaryOp::Exp);
  record("ExpBackward", y, {x}, {{y, true}}, [](const GradList& g, const GradList& s, const Node&) {
    return GradList{mul(g[0], s[0])};
  });
  return y;
}

Tensor log(const Tensor& x) {
  Tensor y = unary_raw("log", x, UnaryOp::Log);
  record("LogBackward", y, {x}, {{x}}, [](const GradList& g, const GradList& s, const Node&) {
    return GradList{div(g[0], s[0])};
  });
  return y;
}

Tensor abs(const Tensor& x) {
  Tensor y = unary_raw("abs", x, UnaryOp::Abs);
  record("AbsBackward", y, {x}, {{x}}, [](const GradList& g, const GradList& s, const Node&) {
    return GradList{mul(g[0], sign(s[0]))};
  });
  return y;
}

Tensor sign(const Tensor& x) { return mask(x, UnaryOp::Sign, 0.f); }

Tensor clamp(const Tensor& x, float lo, float hi) {
  GANTRY_CHECK(lo <= hi, "clamp: expected lo <= hi, found ", lo, " > ", hi);
  Tensor y = unary_raw("clamp", x, UnaryOp::Clamp, lo, hi);
  record("ClampBackward", y, {x}, {{x}}, [lo, hi](const GradList& g, const GradList& s, const Node&) {
    return GradList{mul(g[0], mask(s[0], UnaryOp::InRange, lo, hi))};
  });
  return y;
}

Tensor relu(const Tensor& x) {
  Tensor y = unary_raw("relu", x, UnaryOp::Relu, 0.f, 0.f, Bf16Output::KeepForActivation);
  record("ReluBackward", y, {x}, {{x}}, [](const GradList& g, const GradList& s, const Node&) {
    return GradList{through_activation(g[0], mask(s[0], UnaryOp::GtScalar, 0.f))};
  });
  return y;
}

Tensor leaky_relu(const Tensor& x, float slope) {
  Tensor y = unary_raw("leaky_relu", x, UnaryOp::LeakyRelu, slope, 0.f, Bf16Output::KeepForActivation);
  record("LeakyReluBackward", y, {x}, {{x}}, [slope](const GradList& g, const GradList& s, const Node&) {
    return GradList{through_activation(g[0], mask(s[0], UnaryOp::LeakyReluSlope, slope))};
  });
  return y;
}

Tensor tanh(const Tensor& x) {
  Tensor y = unary_raw("tanh", x, UnaryOp::Tanh);
  record("TanhBackward", y, {x}, {{y, true}}, [](const GradList& g, const GradList& s, const Node&) {
    return GradList{mul(g[0], rsub(square(s[0]), 1.f))};
  });
  return y;
}

Tensor sigmoid(const Tensor& x) {
  Tensor y = unary_raw("sigmoid", x, UnaryOp::Sigmoid);
  record("SigmoidBackward", y, {x}, {{y, true}}, [](const GradList& g, const GradList& s, const Node&) {
    return GradList{mul(g[0], mul(s[0], rsub(s[0], 1.f)))};
  });
  return y;
}

Tensor softplus(const Tensor& x) {
  Tensor y = unary_raw("softplus", x, UnaryOp::Softplus);
  record("SoftplusBackward", y, {x}, {{x}}, [](const GradList& g, const GradList& s, const Node&) {
    return GradList{mul(g[0], sigmoid(s[0]))};
  });
  return y;
}

Tensor silu(const Tensor& x) {
  Tensor y = unary_raw("silu", x, UnaryOp::Silu);
  record("SiluBackward", y, {x}, {{x}}, [](const GradList& g, const GradList& s, const Node&) {
    return GradList{mul(g[0], chain_derivative(kSiluChain, s[0], 1))};
  });
  return y;
}

Tensor gelu_tanh(const Tensor& x) {
  Tensor y = unary_raw("gelu_tanh", x, UnaryOp::GeluTanh);
  record("GeluTanhBackward", y, {x}, {{x}}, [](const GradList& g, const GradList& s, const Node&) {
    return GradList{mul(g[0], chain_derivative(kGeluTanhChain, s[0], 1))};
  });
  return y;
}

Tensor swiglu(const Tensor& a, const Tensor& b) {
  detail::check_f32_same_device("swiglu", {&a, &b});
  GANTRY_CHECK(a.shape() == b.shape(), "swiglu: expected the gate a and the value b of one shape, "
               "found ", a.shape().str(), " and ", b.shape().str());
  return mul(silu(a), b);
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  Device device = detail::check_f32_same_device("where", {&cond, &a, &b});
  Shape out = broadcast_shapes("where", broadcast_shapes("where", cond.shape(), a.shape()), b.shape());
  Tensor y = empty(out, device);
  detail::backend_of(a).where(cond.view(), a.view(), b.view(), y.view());
  Tensor c = cond.detach();
  Shape sa = a.shape(), sb = b.shape();
  record("WhereBackward", y, {a, b}, {{c}}, [sa, sb](const GradList& g, const GradList& s, const Node& n) {
    Tensor zero = zeros({}, g[0].device());
    return GradList{need(n, 0) ? sum_to(where(s[0], g[0], zero), sa) : Tensor(),
                      need(n, 1) ? sum_to(where(s[0], zero, g[0]), sb) : Tensor()};
  });
  return y;
}

#define GANTRY_COMPARISON(fn, kind)                        \
  Tensor fn(const Tensor& a, const Tensor& b) {            \
    NoGradGuard no_grad;                                   \
    return binary_raw(#fn, a, b, BinaryOp::kind);          \
  }
GANTRY_COMPARISON(gt, Gt)
GANTRY_COMPARISON(lt, Lt)
GANTRY_COMPARISON(ge, Ge)
GANTRY_COMPARISON(le, Le)
GANTRY_COMPARISON(eq, Eq)
#undef GANTRY_COMPARISON

Tensor gt(const Tensor& a, float s) { return mask(a, UnaryOp::GtScalar, s); }

}  // namespace gantry::ops

namespace gantry {
Tensor operator+(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return ops::sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return ops::mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return ops::div(a, b); }
Tensor operator-(const Tensor& a) { return ops::neg(a); }
Tensor operator+(const Tensor& a, float s) { return ops::add(a, s); }
Tensor operator-(const Tensor& a, float s) { return ops::add(a, -s); }
Tensor operator*(const Tensor& a, float s) { return ops::mul(a, s); }
Tensor operator/(const Tensor& a, float s) { return ops::mul(a, 1.0f / s); }
Tensor operator+(float s, const Tensor& a) { return ops::add(a, s); }
Tensor operator-(float s, const Tensor& a) { return ops::rsub(a, s); }
Tensor operator*(float s, const Tensor& a) { return ops::mul(a, s); }
}  // namespace gantry
