#include "nn/patch_embed.h"

#include <memory>

#include "core/ops/ops.h"
#include "nn/conv.h"
#include "nn/init.h"
#include "nn/linear.h"

namespace gantry::nn {

PatchEmbed::PatchEmbed(int64_t in_channels, int64_t embed_dim, int patch, bool bias, RngKey key)
    : Cloneable("PatchEmbed"), in_(in_channels), dim_(embed_dim), p_(patch) {
  GANTRY_CHECK(in_ > 0 && dim_ > 0 && p_ > 0, "PatchEmbed: expected positive in_channels, embed_dim and "
               "patch, found ", in_, ", ", dim_, " and ", p_);
  ConvOptions o;
  o.stride = p_;
  o.bias = bias;
  register_module("proj", std::make_shared<Conv2d>(in_, dim_, p_, o, init::key_for(key, "proj")));
}

Tensor PatchEmbed::forward_impl(const Tensor& x) {
  GANTRY_CHECK(x.dim() == 4 && x.size(1) == in_, "PatchEmbed: expected input (N, ", in_, ", H, W), found ",
               x.shape().str());
  GANTRY_CHECK(x.size(2) % p_ == 0 && x.size(3) % p_ == 0, "PatchEmbed: expected H and W divisible by the "
               "patch size ", p_, ", found input ", x.shape().str());
  Tensor grid = child("proj")->forward(x);  // (N, D, H/p, W/p)
  const int64_t n = grid.size(0), tokens = grid.size(2) * grid.size(3);
  return ops::transpose(ops::reshape(grid, Shape{n, dim_, tokens}), 1, 2);
}

std::string PatchEmbed::extra_repr() const {
  return "in_channels=" + std::to_string(in_) + ", embed_dim=" + std::to_string(dim_) +
         ", patch=" + std::to_string(p_);
}

UnpatchifyHead::UnpatchifyHead(int64_t embed_dim, int64_t out_channels, int patch, int64_t height,
                               int64_t width, bool bias, RngKey key)
    : Cloneable("UnpatchifyHead"), dim_(embed_dim), out_(out_channels), p_(patch), h_(height), w_(width) {
  GANTRY_CHECK(dim_ > 0 && out_ > 0 && p_ > 0 && h_ > 0 && w_ > 0, "UnpatchifyHead: expected positive "
               "embed_dim, out_channels, patch, height and width, found ", dim_, ", ", out_, ", ", p_, ", ",
               h_, " and ", w_);
  GANTRY_CHECK(h_ % p_ == 0 && w_ % p_ == 0, "UnpatchifyHead: expected height and width divisible by the "
               "patch size ", p_, ", found ", h_, " x ", w_);
  register_module("linear", std::make_shared<Linear>(dim_, out_ * p_ * p_, bias, init::key_for(key, "linear")));
}

Tensor UnpatchifyHead::forward_impl(const Tensor& tokens) {
  const int64_t count = (h_ / p_) * (w_ / p_);
  GANTRY_CHECK(tokens.dim() == 3 && tokens.size(1) == count && tokens.size(2) == dim_,
               "UnpatchifyHead: expected tokens (N, ", count, ", ", dim_, "), found ", tokens.shape().str());
  const int64_t n = tokens.size(0);
  Tensor patches = child("linear")->forward(ops::reshape(tokens, Shape{n * count, dim_}));
  return ops::unpatchify(ops::reshape(patches, Shape{n, count, out_ * p_ * p_}), out_, h_, w_, p_);
}

std::string UnpatchifyHead::extra_repr() const {
  return "embed_dim=" + std::to_string(dim_) + ", out_channels=" + std::to_string(out_) +
         ", patch=" + std::to_string(p_) + ", image=" + std::to_string(h_) + "x" + std::to_string(w_);
}

}  // namespace gantry::nn
