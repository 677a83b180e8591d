// First- and second-order gradchecks of R3GAN's objective pieces (Huang et al. 2024): the
// relativistic pairing loss w.r.t. both logits, and the R2 penalty (the zero-centred gradient
// penalty the "r2" term takes at the fakes) w.r.t. a tiny critic's weights: its first
// derivative there is already a second derivative of the critic, through the input gradient.
#include <gtest/gtest.h>

#include "grad_test_util.h"
#include "losses/adversarial_loss.h"
#include "losses/penalty.h"

namespace gantry {
namespace {

using namespace gradtest;

losses::LossContext shard_of(float global_batch) {
  losses::LossContext c;
  c.denominator = global_batch;
  return c;
}

TEST(R3ganObjectiveGrad, RelativisticPairingBothLossesBothLogits) {
  auto loss = losses::make_relativistic_pairing();
  const losses::LossContext ctx = shard_of(8.f);  // a shard of 5 from a global batch of 8
  for (const Shape& shape : {Shape{5}, Shape{5, 1}}) {
    SCOPED_TRACE(shape.str());
    // wide logits: softplus's tails and its middle
    Tensor real = input(shape, 7100, -4.f, 4.f), fake = input(shape, 7101, -4.f, 4.f);
    Fn d = [&](const TensorList& in) { return loss->discriminator_loss(in[0], in[1], ctx); };
    Fn g = [&](const TensorList& in) { return loss->generator_loss(in[1], in[0], ctx); };
    EXPECT_EQ(check_grad(d, {real, fake}), "");
    EXPECT_EQ(check_gradgrad(d, {real, fake}), "");
    EXPECT_EQ(check_grad(g, {real, fake}), "");
    EXPECT_EQ(check_gradgrad(g, {real, fake}), "");
  }
}

TEST(R3ganObjectiveGrad, R2PenaltyWrtCriticWeightsFirstAndSecondOrder) {
  // D(x) = w2 tanh(w1 flatten(x) + b1) + b2, smooth so finite differences meet no kink; b2 does
  // not reach an input gradient and is held constant
  Tensor w1 = input({3, 4}, 7200), b1 = input({3}, 7201, -0.5f, 0.5f), w2 = input({1, 3}, 7202);
  Tensor b2 = constant({1}, 7203);
  Tensor fake = constant({3, 1, 2, 2}, 7204, -1.5f, 1.5f);
  const losses::LossContext ctx = shard_of(4.f);
  Fn r2 = [&](const TensorList& in) {
    losses::Critic critic = [&in, &b2](const Tensor& x) {
      return ops::linear(ops::tanh(ops::linear(ops::flatten(x), in[0], in[1])), in[2], b2);
    };
    return losses::zero_centred_gradient_penalty(critic, fake, 3.f, ctx);
  };
  EXPECT_EQ(check_grad(r2, {w1, b1, w2}), "");
  EXPECT_EQ(check_gradgrad(r2, {w1, b1, w2}), "");
}

}  // namespace
}  // namespace gantry
