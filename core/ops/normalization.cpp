#include <tuple>

#include "core/ops/op_support.h"

namespace gantry::ops {

using detail::record;
using autograd::Node;

namespace {

// (C,) -> (1, C[, 1, 1]) so it broadcasts over x (N, C[, H, W])
Tensor per_channel(const Tensor& t, int rank) {
  return reshape(t, rank == 4 ? Shape{1, t.size(0), 1, 1} : Shape{1, t.size(0)});
}

// Writes `value` into `target`'s storage (running statistics are updated in place).
void assign(const Tensor& target, const Tensor& value) {
  backend_for(target.device()).copy(value.view(), target.view());
  target.bump_version();
}

// The backward of training-mode batch norm as an op: its outputs carry a node that refuses a
// second derivative (see record_not_twice_differentiable).
GradList batch_norm_backward(const Tensor& x, const Tensor& gy, const Tensor& mean,
                             const Tensor& var, const Tensor& gamma, float eps,
                             const BatchNormActivation& act, const Tensor& y, bool want_gx,
                             bool want_params) {
  Backend& be = backend_for(x.device());
  Tensor gx = empty(x.shape(), x.device());
  Tensor ggamma, gbeta;
  View gv = gamma.defined() ? gamma.view() : View{}, ggv, gbv;
  if (want_params && gamma.defined()) {
    ggamma = empty(gamma.shape(), x.device());
    gbeta = empty(gamma.shape(), x.device());
    ggv = ggamma.view();
    gbv = gbeta.view();
  }
  // x, gy (and the activation's output y) in one layout, blocked when all are, in bf16 when all
  // are (Note [blocked activations], Note [bf16 activations]); gx follows.
  auto native = [&](bool accepts_bf16) {
    View xv = x.native_view(accepts_bf16), gyv = gy.native_view(accepts_bf16),
         yv = y.defined() ? y.native_view(accepts_bf16) : xv;
    const bool shared = gyv.layout == xv.layout && yv.layout == xv.layout;
    return std::tuple{xv, gyv, yv, shared};
  };
  auto [xv, gyv, yv, shared] = native(true);
  if (!shared) std::tie(xv, gyv, yv, shared) = native(false);  // widens the bf16 ones
  if (!shared) {
    xv = x.view();
    gyv = gy.view();
    if (y.defined()) yv = y.view();
  }
  View gxv = gx.view();
  gxv.layout = xv.layout;
  be.batch_norm_backward(xv, gyv, mean.view(), var.view(), gamma.defined() ? &gv : nullptr, eps,
                         act, y.defined() ? &yv : nullptr, gxv,
                         ggamma.defined() ? &ggv : nullptr, gbeta.defined() ? &gbv : nullptr);
  gx.set_layout(xv.layout);
  SmallVector<Tensor*, 3> outs{&gx};
  if (ggamma.defined()) {
    outs.push_back(&ggamma);
    outs.push_back(&gbeta);
  }
  detail::record_not_twice_differentiable("BatchNormBackward", outs, {x, gy, gamma});
  return {want_gx ? gx : Tensor(), ggamma, gbeta};
}

}  // namespace

Tensor activate(const Tensor& y, const BatchNormActivation& activation) {
  switch (activation.kind) {
    case BatchNormActivation::Kind::None: return y;
    case BatchNormActivation::Kind::Relu: return relu(y);
    case BatchNormActivation::Kind::LeakyRelu: return leaky_relu(y, activation.negative_slope);
  }
  return y;
}

Tensor batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  float momentum, float eps, const BatchNormActivation& activation) {
  Device device = detail::check_f32_same_device(
      "batch_norm", {&x, &gamma, &beta, &running_mean, &running_var});
  GANTRY_CHECK(x.dim() == 2 || x.dim() == 4, "batch_norm: expected input (N, C) or (N, C, H, W), "
               "found ", x.shape().str());
  const int64_t c = x.size(1);
  for (const Tensor* t : {&gamma, &beta, &running_mean, &running_var})
    GANTRY_CHECK(!t->defined() || (t->dim() == 1 && t->size(0) == c), "batch_norm: expected "
                 "per-channel parameters of shape (", c, ",) for input ", x.shape().str(),
                 ", found ", t->shape().str());
  GANTRY_CHECK(gamma.defined() == beta.defined(), "batch_norm: gamma and beta must both be given "
               "or both be omitted");
  const int64_t per_channel_count = x.numel() / std::max<int64_t>(c, 1);

  if (!training) {
    GANTRY_CHECK(running_mean.defined() && running_var.defined(), "batch_norm: eval mode needs "
                 "running_mean and running_var");
    // An affine map of x, written with differentiable ops (so double backward works in eval).
    Tensor scale = rsqrt(add(running_var.detach(), eps));
    if (gamma.defined()) scale = mul(scale, gamma);
    Tensor shift = neg(mul(running_mean.detach(), scale));
    if (beta.defined()) shift = add(shift, beta);
    return activate(add(mul(x, per_channel(scale, x.dim())), per_channel(shift, x.dim())),
                    activation);
  }

  GANTRY_CHECK(per_channel_count > 1, "batch_norm: training needs more than one value per "
               "channel, found input ", x.shape().str());
  Tensor y = empty(x.shape(), device), mean = empty(Shape{c}, device), var = empty(Shape{c}, device);
  View gv = gamma.defined() ? gamma.view() : View{}, bv = beta.defined() ? beta.view() : View{};
  const View xv = x.native_view(true);  // y in x's layout (Note [blocked activations])
  View yv = y.view();
  yv.layout = xv.layout;
  backend_for(device).batch_norm_forward_training(xv, gamma.defined() ? &gv : nullptr,
                                                  beta.defined() ? &bv : nullptr, eps, activation,
                                                  yv, mean.view(), var.view());
  y.set_layout(xv.layout);
  if (running_mean.defined()) {
    NoGradGuard no_grad;
    float unbias = static_cast<float>(per_channel_count) / static_cast<float>(per_channel_count - 1);
    assign(running_mean, add(mul(running_mean, 1.f - momentum), mul(mean, momentum)));
    assign(running_var, add(mul(running_var, 1.f - momentum), mul(var, momentum * unbias)));
  }
  // With an activation the backward also needs the output (its derivative is read off it).
  SmallVector<detail::Save, 5> saved{{x}, {mean}, {var}, {gamma}};
  if (activation.enabled()) saved.push_back({y, true});
  record("BatchNormBackward", y, {x, gamma, beta}, saved,
         [eps, activation](const GradList& g, const GradList& s, const Node& n) {
           bool want_params = n.needs_input_grad(1) || n.needs_input_grad(2);
           return batch_norm_backward(s[0], g[0], s[1], s[2], s[3], eps, activation,
                                      activation.enabled() ? s[4] : Tensor(),
                                      n.needs_input_grad(0), want_params);
         });
  return y;
}

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, int normalized_dims,
                  float eps) {
  detail::check_f32_same_device("layer_norm", {&x, &gamma, &beta});
  GANTRY_CHECK(normalized_dims >= 1 && normalized_dims < x.dim() + 1, "layer_norm: expected 1 to ",
               x.dim(), " normalized dimensions, found ", normalized_dims);
  Shape trailing;
  SmallVector<int, kMaxRank> dims;
  for (int d = x.dim() - normalized_dims; d < x.dim(); ++d) {
    trailing.push_back(x.size(d));
    dims.push_back(d);
  }
  for (const Tensor* t : {&gamma, &beta})
    GANTRY_CHECK(!t->defined() || t->shape() == trailing, "layer_norm: expected parameters of "
                 "shape ", trailing.str(), ", found ", t->shape().str());
  // Written with differentiable ops, so it supports double backward (WGAN-GP critics use it).
  Tensor centered = sub(x, mean(x, dims, true));
  Tensor y = mul(centered, rsqrt(add(mean(square(centered), dims, true), eps)));
  if (gamma.defined()) y = mul(y, gamma);
  if (beta.defined()) y = add(y, beta);
  return y;
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps) {
  detail::check_f32_same_device("rms_norm", {&x, &weight});
  GANTRY_CHECK(x.dim() >= 1 && x.size(-1) > 0, "rms_norm: expected an input (..., D) with D > 0, found ",
               x.shape().str());
  GANTRY_CHECK(!weight.defined() || weight.shape() == Shape{x.size(-1)}, "rms_norm: expected a weight of "
               "shape ", Shape{x.size(-1)}.str(), " for input ", x.shape().str(), ", found ", weight.shape().str());
  GANTRY_CHECK(eps >= 0.f, "rms_norm: expected eps >= 0, found ", eps);
  // Composed of differentiable ops, as layer_norm: every order of derivative is exact.
  const int last = x.dim() - 1;
  Tensor y = mul(x, rsqrt(add(mean(square(x), {last}, true), eps)));
  return weight.defined() ? mul(y, weight) : y;
}

}  // namespace gantry::ops
