// Finite-difference gradients through ADA's pipeline with fixed random parameters (one
// grid_sample with reflection padding, then the colour matrix): first and second order in the
// images, and an R1 penalty through it (D o augment differentiated with create_graph, then
// again for D's update), as the discriminator's update with ADA differentiates it.
#include <gtest/gtest.h>

#include "augment/ada_pipeline.h"
#include "grad_test_util.h"

namespace gantry::gradtest {
namespace {

augment::AdaParams bgc_params(const Shape& shape, double p, uint64_t seed) {
  augment::AdaParams params =
      augment::draw_ada_params(augment::ada_preset("bgc"), p, shape, RngKey{seed, 3}, 11, Device::cpu());
  EXPECT_TRUE(params.theta.defined() && params.color.defined()) << "the draws turned nothing on";
  return params;
}

TEST(AdaPipelineGrad, WholePipelineFirstAndSecondOrder) {
  for (int64_t channels : {3, 1}) {
    Tensor x = input({4, channels, 8, 8}, 1900 + static_cast<uint64_t>(channels));
    augment::AdaParams params = bgc_params(x.shape(), 0.8, 31);
    Fn f1 = [params](const TensorList& in) { return wsum(augment::apply_ada(in[0], params)); };
    Fn f2 = [params](const TensorList& in) { return wsum(ops::tanh(augment::apply_ada(in[0], params))); };
    EXPECT_EQ(check_grad(f1, {x}), "");
    EXPECT_EQ(check_grad(f2, {x}), "");
    EXPECT_EQ(check_gradgrad(f2, {x}), "");
  }
}

TEST(AdaPipelineGrad, R1ThroughTheAdaPipelineFirstOrder) {
  // R1 = sum ||d D(augment(x)) / dx||^2 with a one-layer critic; its gradients with respect to
  // the critic's weights and to x differentiate the adjoint of grid_sample again
  Tensor x = input({3, 3, 8, 8}, 1910);
  Tensor w = input({2, 3, 3, 3}, 1911, -0.15f, 0.15f);
  augment::AdaParams params = bgc_params(x.shape(), 1.0, 32);
  Fn r1 = [params](const TensorList& in) {
    Tensor xin = in[0];
    Tensor d = ops::sum(ops::tanh(ops::conv2d(augment::apply_ada(xin, params), in[1], {},
                                              ops::Conv2dOptions::make(1, 1))));
    TensorList g = autograd::grad({d}, {xin}, {}, true, true);
    return ops::sum(ops::square(g[0]));
  };
  EXPECT_EQ(check_grad(r1, {x, w}), "");
}

}  // namespace
}  // namespace gantry::gradtest
