// Images to tokens and back for vision-transformer GANs (ViT, DiT, GAT); the token layout is
// Note [patch token layout] in core/ops/patchify.cpp.
//
// PatchEmbed: timm's / DiT's patch embedding, a Conv2d(C, D, p, stride=p) child "proj" (state
// "proj.weight" (D, C, p, p), "proj.bias" (D)) whose output (N, D, H/p, W/p) is read as tokens
// (N, (H/p)(W/p), D) in row-major patch order, as torch's proj(x).flatten(2).transpose(1, 2).
// UnpatchifyHead: the way back, a Linear(D, C p p) child "linear" applied to each token, then
// ops::unpatchify to (N, C, H, W), H and W fixed at construction. Its output rows are in
// (C, p, p) order; DiT's final layer writes (p, p, C), so DiT weights load after permuting rows.
#pragma once

#include "nn/module.h"

namespace gantry::nn {

class PatchEmbed : public Cloneable<PatchEmbed> {
 public:
  // Parameters drawn with PyTorch's default Conv2d initialisation from init::key_for(key, "proj").
  PatchEmbed(int64_t in_channels, int64_t embed_dim, int patch, bool bias = true, RngKey key = {});

  int64_t in_channels() const { return in_; }
  int64_t embed_dim() const { return dim_; }
  int patch() const { return p_; }
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& x) override;  // (N, C, H, W) -> (N, (H/p)(W/p), D)

 private:
  int64_t in_, dim_;
  int p_;
};

class UnpatchifyHead : public Cloneable<UnpatchifyHead> {
 public:
  // Parameters drawn with PyTorch's default Linear initialisation from init::key_for(key, "linear").
  UnpatchifyHead(int64_t embed_dim, int64_t out_channels, int patch, int64_t height, int64_t width,
                 bool bias = true, RngKey key = {});

  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& tokens) override;  // (N, (H/p)(W/p), D) -> (N, C, H, W)

 private:
  int64_t dim_, out_;
  int p_;
  int64_t h_, w_;
};

}  // namespace gantry::nn
