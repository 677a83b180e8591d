// The transformer-GAN blocks of issue 45 (after GAT): rms_norm and nn::RMSNorm, swiglu and
// nn::SwiGLU, patchify / unpatchify and nn::PatchEmbed / nn::UnpatchifyHead: hand-computed
// values, the token layout (Note [patch token layout]), exact inverses, and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/ops/ops.h"
#include "nn/conv.h"
#include "nn/patch_embed.h"
#include "nn/rms_norm.h"
#include "nn/swiglu.h"
#include "support/error_text.h"

namespace gantry {
namespace {

using testing::error_of;

Tensor t(std::vector<float> v, Shape s) { return ops::from_vector(v, s); }

// 0, 1, 2, ... as f32 of `shape`: every element tells where it came from.
Tensor iota(const Shape& shape) { return ops::reshape(ops::arange(0, static_cast<double>(shape.numel())), shape); }

// ---- rms_norm

TEST(TransformerOps, RmsNormValues) {
  // rows (3, 4): mean square 12.5, and (0, 0): 0, so y = x / sqrt(eps) = 0
  Tensor x = t({3, 4, 0, 0}, {2, 2});
  std::vector<float> y = ops::rms_norm(x, t({2, -1}, {2}), 1e-6f).to_vector();
  const double r = 1.0 / std::sqrt(12.5 + 1e-6);
  EXPECT_NEAR(y[0], 2 * 3 * r, 1e-6);
  EXPECT_NEAR(y[1], -4 * r, 1e-6);
  EXPECT_EQ(y[2], 0.f);
  EXPECT_EQ(y[3], 0.f);
  // without a weight, over the last of three dimensions
  std::vector<float> z = ops::rms_norm(t({1, -1, 2, 2, 0, 0, 0, 5}, {2, 1, 4}), {}, 0.f).to_vector();
  const std::vector<float> want{1 / std::sqrt(2.5f), -1 / std::sqrt(2.5f), 2 / std::sqrt(2.5f), 2 / std::sqrt(2.5f),
                                0, 0, 0, 2};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(z[i], want[i], 1e-6) << i;
}

TEST(TransformerOps, RmsNormErrorsNameTheOpAndShapes) {
  EXPECT_EQ(error_of([] { ops::rms_norm(ops::ones({2, 3}), ops::ones({4})); }),
            "rms_norm: expected a weight of shape (3,) for input (2, 3), found (4,)");
  EXPECT_EQ(error_of([] { ops::rms_norm(ops::ones({}), {}); }),
            "rms_norm: expected an input (..., D) with D > 0, found ()");
  EXPECT_EQ(error_of([] { ops::rms_norm(ops::ones({2}), {}, -1.f); }), "rms_norm: expected eps >= 0, found -1");
}

TEST(TransformerOps, RmsNormModule) {
  nn::RMSNorm m(4);
  EXPECT_EQ(m.eps(), 1e-6);
  EXPECT_EQ(m.get("weight").to_vector(), std::vector<float>(4, 1.f));
  EXPECT_EQ(m.extra_repr(), "(4,), eps=1e-06, elementwise_affine=true");
  Tensor x = ops::randn({2, 3, 4}, RngKey{7, 0});
  EXPECT_EQ(m.forward(x).to_vector(), ops::rms_norm(x, ops::ones({4})).to_vector());
  nn::RMSNorm plain(4, 1e-5, /*elementwise_affine=*/false);
  EXPECT_TRUE(plain.named_parameters().empty());
  EXPECT_EQ(plain.forward(x).to_vector(), ops::rms_norm(x, {}, 1e-5f).to_vector());
  EXPECT_EQ(error_of([&] { m.forward(ops::ones({2, 5})); }), "RMSNorm: expected input (..., 4), found (2, 5)");
}

// ---- swiglu

TEST(TransformerOps, SwigluIsSiluTimesValue) {
  Tensor a = t({-2, 0, 1, 3}, {2, 2}), b = t({1, 5, -2, 0.5f}, {2, 2});
  std::vector<float> y = ops::swiglu(a, b).to_vector();
  std::vector<float> av = a.to_vector(), bv = b.to_vector();
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], av[i] / (1 + std::exp(-av[i])) * bv[i], 1e-6) << i;
  EXPECT_EQ(error_of([] { ops::swiglu(ops::ones({2, 3}), ops::ones({3})); }),
            "swiglu: expected the gate a and the value b of one shape, found (2, 3) and (3,)");
}

TEST(TransformerOps, SwigluModuleIsThreeLinearMaps) {
  nn::SwiGLU m(4, 6, /*bias=*/false, RngKey{3, 0});
  std::vector<std::string> names;
  for (const auto& [name, p] : m.named_parameters()) names.push_back(name + " " + p.shape().str());
  EXPECT_EQ(names, (std::vector<std::string>{"w1.weight (6, 4)", "w2.weight (4, 6)", "w3.weight (6, 4)"}));
  Tensor x = ops::randn({2, 3, 4}, RngKey{8, 0});
  Tensor rows = ops::reshape(x, {6, 4});
  Tensor want = ops::linear(ops::swiglu(ops::linear(rows, m.child("w1")->get("weight")), ops::linear(rows, m.child("w3")->get("weight"))),
                            m.child("w2")->get("weight"));
  Tensor y = m.forward(x);
  EXPECT_EQ(y.shape(), x.shape());
  EXPECT_EQ(y.to_vector(), want.to_vector());
  EXPECT_EQ(nn::SwiGLU(4, 6, true).named_parameters().size(), 6u);
  EXPECT_EQ(error_of([&] { m.forward(ops::ones({2, 3})); }), "SwiGLU: expected input (N, ..., 4), found (2, 3)");
}

// ---- patchify / unpatchify

// Token i (W/p) + j holds x[n, c, i p + a, j p + b] at c p^2 + a p + b.
TEST(TransformerOps, PatchifyTokenLayout) {  // Note [patch token layout]
  const int64_t n = 2, c = 3, h = 4, w = 6, p = 2;
  Tensor x = iota({n, c, h, w});
  Tensor tokens = ops::patchify(x, p);
  ASSERT_EQ(tokens.shape(), Shape({n, (h / p) * (w / p), c * p * p}));
  std::vector<float> got = tokens.to_vector(), xs = x.to_vector();
  int64_t mismatches = 0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < h / p; ++i)
      for (int64_t j = 0; j < w / p; ++j)
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t di = 0; di < p; ++di)
            for (int64_t dj = 0; dj < p; ++dj) {
              const int64_t token = i * (w / p) + j, k = ch * p * p + di * p + dj;
              const float want = xs[((b * c + ch) * h + i * p + di) * w + j * p + dj];
              mismatches += got[(b * tokens.size(1) + token) * tokens.size(2) + k] != want;
            }
  EXPECT_EQ(mismatches, 0);
}

TEST(TransformerOps, UnpatchifyIsTheExactInverse) {
  Tensor x = ops::randn({2, 3, 4, 6}, RngKey{9, 0});
  for (int64_t p : {1, 2}) {
    EXPECT_EQ(ops::unpatchify(ops::patchify(x, p), 3, 4, 6, p).to_vector(), x.to_vector()) << "p " << p;
  }
  Tensor tokens = ops::randn({2, 6, 12}, RngKey{9, 1});
  EXPECT_EQ(ops::patchify(ops::unpatchify(tokens, 3, 4, 6, 2), 2).to_vector(), tokens.to_vector());
  // one patch covering the image: a token is the image flattened
  EXPECT_EQ(ops::patchify(x, 1).shape(), Shape({2, 24, 3}));
  EXPECT_EQ(ops::unpatchify(ops::reshape(x, {2, 1, 72}), 2, 6, 6, 6).to_vector(), x.to_vector());
}

TEST(TransformerOps, PatchifyErrorsNameTheOpAndShapes) {
  EXPECT_EQ(error_of([] { ops::patchify(ops::ones({2, 3, 5, 6}), 2); }),
            "patchify: expected H and W divisible by the patch size 2, found H = 5, W = 6 (input (2, 3, 5, 6))");
  EXPECT_EQ(error_of([] { ops::patchify(ops::ones({2, 3, 4, 6}), 4); }),
            "patchify: expected H and W divisible by the patch size 4, found H = 4, W = 6 (input (2, 3, 4, 6))");
  EXPECT_EQ(error_of([] { ops::patchify(ops::ones({3, 4, 6}), 2); }),
            "patchify: expected an image batch (N, C, H, W), found (3, 4, 6)");
  EXPECT_EQ(error_of([] { ops::patchify(ops::ones({1, 1, 4, 4}), 0); }),
            "patchify: expected a patch size p >= 1, found 0 (input (1, 1, 4, 4))");
  EXPECT_EQ(error_of([] { ops::unpatchify(ops::ones({2, 6, 12}), 3, 4, 7, 2); }),
            "unpatchify: expected H and W divisible by the patch size 2, found H = 4, W = 7 (input (2, 6, 12))");
  EXPECT_EQ(error_of([] { ops::unpatchify(ops::ones({2, 6, 12}), 2, 4, 6, 2); }),
            "unpatchify: expected tokens (N, 6, 8) for C = 2, H = 4, W = 6, p = 2, found (2, 6, 12)");
}

// The ViT/DiT patch embedding is the linear map of the (C, p, p) tokens with the conv weight's
// rows: the layout of patchify is the conv's.
TEST(TransformerOps, PatchEmbedIsALinearMapOfTheTokens) {
  nn::PatchEmbed m(3, 5, 2, /*bias=*/true, RngKey{4, 0});
  EXPECT_EQ(m.child("proj")->get("weight").shape(), Shape({5, 3, 2, 2}));
  EXPECT_EQ(m.child("proj")->get("bias").shape(), Shape({5}));
  Tensor x = ops::randn({2, 3, 4, 6}, RngKey{10, 0});
  Tensor y = m.forward(x);
  ASSERT_EQ(y.shape(), Shape({2, 6, 5}));
  Tensor tokens = ops::reshape(ops::patchify(x, 2), {12, 12});
  Tensor want = ops::linear(tokens, ops::reshape(m.child("proj")->get("weight"), {5, 12}), m.child("proj")->get("bias"));
  std::vector<float> got = y.to_vector(), wanted = want.to_vector();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], wanted[i], 1e-5) << i;
  EXPECT_EQ(error_of([&] { m.forward(ops::ones({1, 3, 5, 4})); }),
            "PatchEmbed: expected H and W divisible by the patch size 2, found input (1, 3, 5, 4)");
  EXPECT_EQ(error_of([&] { m.forward(ops::ones({1, 2, 4, 4})); }),
            "PatchEmbed: expected input (N, 3, H, W), found (1, 2, 4, 4)");
}

TEST(TransformerOps, UnpatchifyHeadMapsTokensToTheImage) {
  nn::UnpatchifyHead m(5, 2, 2, 4, 6, /*bias=*/true, RngKey{5, 0});
  EXPECT_EQ(m.child("linear")->get("weight").shape(), Shape({8, 5}));
  Tensor tokens = ops::randn({2, 6, 5}, RngKey{11, 0});
  Tensor y = m.forward(tokens);
  ASSERT_EQ(y.shape(), Shape({2, 2, 4, 6}));
  Tensor patches = ops::linear(ops::reshape(tokens, {12, 5}), m.child("linear")->get("weight"), m.child("linear")->get("bias"));
  EXPECT_EQ(ops::patchify(y, 2).to_vector(), patches.to_vector());
  EXPECT_EQ(error_of([&] { m.forward(ops::ones({2, 4, 5})); }), "UnpatchifyHead: expected tokens (N, 6, 5), found (2, 4, 5)");
  EXPECT_EQ(error_of([] { nn::UnpatchifyHead(5, 2, 2, 4, 5); }),
            "UnpatchifyHead: expected height and width divisible by the patch size 2, found 4 x 5");
}

}  // namespace
}  // namespace gantry
