// Images as token grids and back, for vision transformers (ViT, DiT, GAT).
//
// Note [patch token layout]: patchify(x, p) cuts x (N, C, H, W) into p x p patches and lists
// them in row-major order (token t = i (W / p) + j for the patch at rows [i p, i p + p) and
// columns [j p, j p + p)); a token holds its patch's (C, p, p) block flattened, element
// c p^2 + a p + b = x[n, c, i p + a, j p + b]. That is the layout of a Conv2d(C, D, p, stride=p)
// weight row, so the ViT/DiT patch embedding conv equals linear(patchify(x, p), w.reshape(D, C p p))
// (nn/patch_embed.h), and the PyTorch twin is
//   x.reshape(N, C, H/p, p, W/p, p).permute(0, 2, 4, 1, 3, 5).reshape(N, H/p * W/p, C*p*p).
// DiT's own unpatchify reads tokens as (p, p, C) instead; a DiT final layer's output rows are
// therefore a permutation of ours. unpatchify is the inverse of patchify (the same 6-D view,
// permuted back). Both are reshapes (views) and one permute (a strided copy whose backward is
// the inverse permute), so every order of derivative is exact.
#include "core/ops/op_support.h"

namespace gantry::ops {

namespace {

void check_patch_size(const char* op, int64_t height, int64_t width, int64_t p, const Shape& shown) {
  GANTRY_CHECK(p >= 1, op, ": expected a patch size p >= 1, found ", p, " (input ", shown.str(), ")");
  GANTRY_CHECK(height % p == 0 && width % p == 0, op, ": expected H and W divisible by the patch size ",
               p, ", found H = ", height, ", W = ", width, " (input ", shown.str(), ")");
}

}  // namespace

Tensor patchify(const Tensor& x, int64_t p) {
  detail::check_f32_same_device("patchify", {&x});
  GANTRY_CHECK(x.dim() == 4, "patchify: expected an image batch (N, C, H, W), found ", x.shape().str());
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  check_patch_size("patchify", h, w, p, x.shape());
  Tensor blocks = reshape(x, Shape{n, c, h / p, p, w / p, p});
  Tensor grid = permute(blocks, {0, 2, 4, 1, 3, 5});  // (N, H/p, W/p, C, p, p)
  return reshape(grid, Shape{n, (h / p) * (w / p), c * p * p});
}

Tensor unpatchify(const Tensor& tokens, int64_t channels, int64_t height, int64_t width, int64_t p) {
  detail::check_f32_same_device("unpatchify", {&tokens});
  GANTRY_CHECK(channels >= 1 && height >= 1 && width >= 1, "unpatchify: expected positive C, H and W, found ",
               channels, ", ", height, ", ", width);
  check_patch_size("unpatchify", height, width, p, tokens.shape());
  const int64_t gh = height / p, gw = width / p;
  GANTRY_CHECK(tokens.dim() == 3 && tokens.size(1) == gh * gw && tokens.size(2) == channels * p * p,
               "unpatchify: expected tokens (N, ", gh * gw, ", ", channels * p * p, ") for C = ", channels,
               ", H = ", height, ", W = ", width, ", p = ", p, ", found ", tokens.shape().str());
  const int64_t n = tokens.size(0);
  Tensor grid = reshape(tokens, Shape{n, gh, gw, channels, p, p});
  Tensor blocks = permute(grid, {0, 3, 1, 4, 2, 5});  // (N, C, H/p, p, W/p, p)
  return reshape(blocks, Shape{n, channels, height, width});
}

}  // namespace gantry::ops
