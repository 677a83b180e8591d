// First- and second-order gradchecks of consistency regularisation (Zhao et al. 2021): the
// penalty bCR and zCR take, sum_i ||a_i - b_i||^2 over the denominator, w.r.t. a tiny critic's
// weights with a and b the critic's logits on images and on their transform (bCR, zCR's D term),
// w.r.t. two image batches, and zCR's G term w.r.t. a tiny generator's weights (a negative weight).
#include <gtest/gtest.h>

#include "grad_test_util.h"
#include "losses/penalty.h"

namespace gantry {
namespace {

using namespace gradtest;

TEST(ConsistencyGrad, PenaltyOnCriticLogitsWrtWeightsFirstAndSecondOrder) {
  // D(x) = w2 tanh(w1 flatten(x) + b1) + b2, smooth; x and T(x) are fixed images (a translation's
  // result is just other pixel values)
  Tensor w1 = input({3, 4}, 7300), b1 = input({3}, 7301, -0.5f, 0.5f), w2 = input({1, 3}, 7302);
  Tensor b2 = input({1}, 7303);
  Tensor x = constant({3, 1, 2, 2}, 7304, -1.5f, 1.5f), tx = constant({3, 1, 2, 2}, 7305, -1.5f, 1.5f);
  losses::LossContext ctx;
  ctx.denominator = 5.f;  // a shard of 3 from a global batch of 5
  for (bool column : {false, true}) {
    SCOPED_TRACE(column ? "logits (n, 1)" : "logits (n,)");
    Fn bcr = [&](const TensorList& in) {
      auto d = [&](const Tensor& images) {
        Tensor out = ops::linear(ops::tanh(ops::linear(ops::flatten(images), in[0], in[1])), in[2], in[3]);
        return column ? out : ops::flatten(out, 0);
      };
      return losses::consistency_penalty(d(x), d(tx), 10.f, ctx);
    };
    EXPECT_EQ(check_grad(bcr, {w1, b1, w2, b2}), "");
    EXPECT_EQ(check_gradgrad(bcr, {w1, b1, w2, b2}), "");
  }
}

TEST(ConsistencyGrad, PenaltyOnImagesBothSidesNegativeWeight) {
  Tensor a = input({3, 2, 2, 2}, 7310), b = input({3, 2, 2, 2}, 7311);
  losses::LossContext ctx;
  ctx.denominator = 4.f;
  Fn zcr_generator = [&](const TensorList& in) { return losses::consistency_penalty(in[0], in[1], -0.5f, ctx); };
  EXPECT_EQ(check_grad(zcr_generator, {a, b}), "");
  EXPECT_EQ(check_gradgrad(zcr_generator, {a, b}), "");
}

// zCR's G term through a tiny generator G(z) = tanh(W z + b): -lambda_gen ||G(z) - G(z + dz)||^2
// w.r.t. W and b, both forwards differentiated.
TEST(ConsistencyGrad, ZcrGeneratorTermWrtGeneratorWeightsFirstAndSecondOrder) {
  Tensor w = input({6, 3}, 7320), b = input({6}, 7321, -0.5f, 0.5f);
  Tensor z = constant({4, 3}, 7322, -1.5f, 1.5f), dz = constant({4, 3}, 7323, -0.1f, 0.1f);
  losses::LossContext ctx;
  ctx.denominator = 6.f;
  Fn zcr = [&](const TensorList& in) {
    auto g = [&](const Tensor& latent) { return ops::reshape(ops::tanh(ops::linear(latent, in[0], in[1])), {4, 1, 2, 3}); };
    return losses::consistency_penalty(g(z), g(ops::add(z, dz)), -0.5f, ctx);
  };
  EXPECT_EQ(check_grad(zcr, {w, b}), "");
  EXPECT_EQ(check_gradgrad(zcr, {w, b}), "");
}

}  // namespace
}  // namespace gantry
