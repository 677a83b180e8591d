// Canaries: the harness must be able to fail. Each test builds a function whose autograd
// gradient is deliberately wrong and asserts that the check reports it (a non-empty message).
// The deliberately wrong ops are recorded with the engine's own recording helper, exactly as
// real ops are, so they go through the same autograd machinery.
#include <gtest/gtest.h>

#include <string>

#include "core/ops/op_support.h"
#include "grad_test_util.h"

namespace gantry {
namespace {

using namespace gradtest;
using autograd::Node;
using ops::detail::record;
using ops::detail::Save;

// y = x^2 whose backward is g * 2x * (1 + error).
Tensor square_with_scaled_grad(const Tensor& x, float error) {
  Tensor y;
  {
    NoGradGuard no_grad;
    y = ops::square(x);
  }
  record("WrongSquareBackward", y, {x}, {{x}},
         [error](const TensorList& g, const TensorList& s, const Node&) {
           return TensorList{ops::mul(g[0], ops::mul(s[0], 2.f * (1.f + error)))};
         });
  return y;
}

// y = x^3 with a correct first derivative 3x^2 written as 3 * x * detach(x): its own derivative
// is then 3x instead of 6x, so only a second-order check can see it.
Tensor cube_with_wrong_second_derivative(const Tensor& x) {
  Tensor y;
  {
    NoGradGuard no_grad;
    y = ops::pow(x, 3.f);
  }
  record("WrongCubeBackward", y, {x}, {{x}}, [](const TensorList& g, const TensorList& s, const Node&) {
    return TensorList{ops::mul(g[0], ops::mul(ops::mul(s[0], s[0].detach()), 3.f))};
  });
  return y;
}

// y = x^3 whose backward is computed without history (as if written with raw kernels).
Tensor cube_with_non_differentiable_backward(const Tensor& x) {
  Tensor y;
  {
    NoGradGuard no_grad;
    y = ops::pow(x, 3.f);
  }
  record("OpaqueCubeBackward", y, {x}, {{x}}, [](const TensorList& g, const TensorList& s, const Node&) {
    NoGradGuard no_grad;
    return TensorList{ops::mul(g[0], ops::mul(ops::square(s[0]), 3.f))};
  });
  return y;
}

TEST(Canary, CorrectCustomOpPasses) {
  Tensor x = input({2, 3}, 1);
  EXPECT_EQ(check_grad([](const TensorList& in) { return wsum(square_with_scaled_grad(in[0], 0.f)); },
                       {x}),
            "");
}

TEST(Canary, FirstOrderCatchesWrongFormula) {
  Tensor x = input({2, 3}, 1);
  EXPECT_NE(check_grad([](const TensorList& in) { return wsum(square_with_scaled_grad(in[0], -0.5f)); },
                       {x}),
            "");
}

// A 5% error in a gradient is caught at the tolerances the suite uses (rtol 5e-3).
TEST(Canary, FirstOrderCatchesSmallRelativeError) {
  Tensor x = input({2, 3}, 1);
  EXPECT_NE(check_grad([](const TensorList& in) { return wsum(square_with_scaled_grad(in[0], 0.05f)); },
                       {x}),
            "");
}

// sign has a zero derivative a.e., but a finite difference across its jump at 0 does not:
// inputs within eps of 0 make autograd and finite differences disagree.
TEST(Canary, FirstOrderCatchesKink) {
  Tensor x = values({0.003f, -0.004f, 0.5f}, {3});
  EXPECT_NE(testing::gradcheck([](const TensorList& in) { return wsum(ops::add(in[0], ops::sign(in[0]))); },
                               {x}),
            "");
}

TEST(Canary, SecondOrderCorrectCubePasses) {
  Tensor x = input({2, 3}, 2);
  EXPECT_EQ(check_grad([](const TensorList& in) { return wsum(cube_with_wrong_second_derivative(in[0])); },
                       {x}),
            "");  // the first derivative is right
}

TEST(Canary, SecondOrderCatchesWrongDoubleBackward) {
  Tensor x = input({2, 3}, 2);
  EXPECT_NE(testing::gradgradcheck(
                [](const TensorList& in) { return wsum(cube_with_wrong_second_derivative(in[0])); },
                {x}),
            "");
}

// A backward without history: gradgradcheck alone treats it as "f is linear" and returns "";
// check_gradgrad (grad_test_util.h) reports it.
TEST(Canary, StrictSecondOrderCatchesNonDifferentiableBackward) {
  Tensor x = input({2, 3}, 3);
  Fn f = [](const TensorList& in) { return wsum(cube_with_non_differentiable_backward(in[0])); };
  EXPECT_EQ(check_grad(f, {x}), "");
  EXPECT_NE(check_gradgrad(f, {x}), "");
}

// A gradient of the wrong shape (not summed back from a broadcast) is reported by check_grad.
TEST(Canary, ShapeCheckCatchesUnreducedBroadcastGradient) {
  Tensor b = input({3, 1}, 4);
  Fn f = [](const TensorList& in) {
    Tensor y;
    {
      NoGradGuard no_grad;
      y = ops::add(in[0], ops::zeros({2, 3, 4}));
    }
    record("UnreducedBackward", y, {in[0]}, {}, [](const TensorList& g, const TensorList&, const Node&) {
      return TensorList{g[0]};  // should be sum_to(g[0], (3, 1))
    });
    return wsum(y);
  };
  EXPECT_NE(check_grad(f, {b}), "");
}

}  // namespace
}  // namespace gantry
