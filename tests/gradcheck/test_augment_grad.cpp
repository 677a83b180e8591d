// Finite-difference gradients through differentiable augmentation: translate2d (first and
// second order), the whole DiffAugment pipeline with fixed random parameters (first and second
// order), and an R1 penalty through it, as the discriminator's update differentiates it.
#include <gtest/gtest.h>

#include "augment/diff_augment.h"
#include "grad_test_util.h"

namespace gantry::gradtest {
namespace {

Tensor shifts(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size()) / 2;
  return ops::from_vector(v, Shape{n, 2});
}

augment::AugmentPolicy everything() {
  augment::AugmentPolicy p;
  p.brightness = p.saturation = p.contrast = p.translation = p.cutout = true;
  return p;
}

TEST(AugmentGrad, Translate2dFirstAndSecondOrder) {
  Tensor x = input({3, 2, 5, 6}, 1700);
  for (const Tensor& s : {shifts({1, -2, 0, 0, -3, 4}), shifts({-5, 0, 2, 6, 1, 1})}) {
    Fn f1 = [s](const TensorList& in) { return wsum(ops::translate2d(in[0], s)); };
    Fn f2 = [s](const TensorList& in) { return wsum(ops::square(ops::translate2d(in[0], s))); };
    EXPECT_EQ(check_grad(f1, {x}), "");
    EXPECT_EQ(check_grad(f2, {x}), "");
    EXPECT_EQ(check_gradgrad(f2, {x}), "");
  }
}

TEST(AugmentGrad, WholePipelineFirstAndSecondOrder) {
  Tensor x = input({4, 3, 8, 8}, 1701);
  // p = 0.7: some examples with a transform on, some off (fixed parameters, drawn once)
  augment::AugmentParams params = augment::draw_params(everything(), 0.7, x.shape(), RngKey{17, 1}, 3, x.device());
  Fn f1 = [params](const TensorList& in) { return wsum(augment::apply(in[0], params)); };
  Fn f2 = [params](const TensorList& in) { return wsum(ops::tanh(augment::apply(in[0], params))); };
  EXPECT_EQ(check_grad(f1, {x}), "");
  EXPECT_EQ(check_grad(f2, {x}), "");
  EXPECT_EQ(check_gradgrad(f2, {x}), "");
}

TEST(AugmentGrad, R1ThroughAugmentationFirstOrder) {
  // R1 = sum ||d D(augment(x)) / dx||^2 with a one-layer critic: its gradient with respect to the
  // critic's weights (what D's update uses) and to x are derivatives of a derivative through
  // the augmentation
  // small weights keep R1 O(1), so its finite differences resolve in f32
  Tensor x = input({3, 3, 8, 8}, 1702);
  Tensor w = input({2, 3, 3, 3}, 1703, -0.15f, 0.15f);
  augment::AugmentParams params = augment::draw_params(everything(), 1.0, x.shape(), RngKey{17, 2}, 0, x.device());
  Fn r1 = [params](const TensorList& in) {
    Tensor xin = in[0];
    Tensor d = ops::sum(ops::tanh(ops::conv2d(augment::apply(xin, params), in[1], {}, ops::Conv2dOptions::make(1, 1))));
    TensorList g = autograd::grad({d}, {xin}, {}, true, true);
    return ops::sum(ops::square(g[0]));
  };
  EXPECT_EQ(check_grad(r1, {x, w}), "");
}

}  // namespace
}  // namespace gantry::gradtest
