#include "nn/modulated_conv2d.h"

#include <cmath>
#include <memory>

#include "core/ops/ops.h"
#include "nn/conv2d_resample.h"
#include "nn/equalized_linear.h"
#include "nn/init.h"

namespace gantry::nn {

ModulatedConv2d::ModulatedConv2d(int64_t in_channels, int64_t out_channels, int kernel, int64_t w_dim,
                                 ModulatedConv2dOptions o, RngKey key)
    : Cloneable("ModulatedConv2d"), in_(in_channels), out_(out_channels), k_(kernel), w_dim_(w_dim),
      o_(std::move(o)) {
  GANTRY_CHECK(in_ > 0 && out_ > 0 && k_ >= 1 && w_dim_ > 0,
               "ModulatedConv2d: expected positive channels, kernel and w_dim, found in ", in_, ", out ", out_,
               ", kernel ", k_, ", w_dim ", w_dim_);
  GANTRY_CHECK(o_.up >= 1, "ModulatedConv2d: expected up >= 1, found ", o_.up);
  EqualizedLinearOptions affine;
  affine.bias_init = 1.0f;
  register_module("affine", std::make_shared<EqualizedLinear>(w_dim_, in_, affine, init::key_for(key, "affine")));
  register_parameter("weight", ops::empty({out_, in_, k_, k_}));
  if (o_.up > 1) register_buffer("resample_filter", ops::fir_filter(o_.resample_taps));
  reset_parameters(key);
}

void ModulatedConv2d::reset_parameters(RngKey key) {
  init::normal_(get("weight"), 0.0, 1.0, init::key_for(key, "weight"));
}

Tensor ModulatedConv2d::styles(const Tensor& w) {
  GANTRY_CHECK(w.dim() == 2 && w.size(1) == w_dim_, "ModulatedConv2d: expected latents (N, ", w_dim_,
               "), found ", w.shape().str());
  Tensor s = child("affine")->forward(w);  // (N, in)
  if (!o_.demodulate) s = ops::mul(s, 1.0f / std::sqrt(static_cast<float>(in_ * k_ * k_)));
  return s;
}

Tensor ModulatedConv2d::forward_with_style(const Tensor& x, const Tensor& w) {
  GANTRY_CHECK(x.dim() == 4 && x.size(1) == in_, "ModulatedConv2d: expected input (N, ", in_,
               ", H, W), found ", x.shape().str());
  GANTRY_CHECK(w.dim() == 2 && w.size(0) == x.size(0), "ModulatedConv2d: expected latents (", x.size(0), ", ",
               w_dim_, ") for input ", x.shape().str(), ", found ", w.shape().str());
  const int64_t n = x.size(0);
  Tensor s = styles(w);                                  // (N, I)
  const Tensor& weight = get("weight");                   // (O, I, k, k)
  Tensor xs = ops::mul(x, ops::reshape(s, {n, in_, 1, 1}));
  Tensor f = has("resample_filter") ? get("resample_filter") : Tensor();
  Tensor y = conv2d_resample(xs, weight, f, o_.up, 1, k_ / 2);  // (N, O, H', W')
  if (!o_.demodulate) return y;
  // sum_{i,k} (weight[o,i,k] s[n,i])^2 = (s^2 @ sum_k weight^2 ^T)[n, o]
  Tensor weight_sq = ops::sum(ops::square(weight), {2, 3});  // (O, I)
  Tensor dcoefs = ops::rsqrt(ops::add(ops::matmul(ops::square(s), weight_sq, false, true), 1e-8f));  // (N, O)
  return ops::mul(y, ops::reshape(dcoefs, {n, out_, 1, 1}));
}

Tensor ModulatedConv2d::forward_impl(const Tensor&) {
  GANTRY_FAIL("ModulatedConv2d: forward needs the latents w as well; call forward_with_style(x, w)");
}

std::string ModulatedConv2d::extra_repr() const {
  return "in_channels=" + std::to_string(in_) + ", out_channels=" + std::to_string(out_) +
         ", kernel=" + std::to_string(k_) + ", w_dim=" + std::to_string(w_dim_) +
         ", demodulate=" + (o_.demodulate ? "true" : "false") + ", up=" + std::to_string(o_.up);
}

}  // namespace gantry::nn
