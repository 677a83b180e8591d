// Custom ops (core/ops/custom_op.h, Note [custom ops]): a backward written with differentiable
// ops gives exact first and second derivatives; saved tensors keep their version checks; a
// backward returning the wrong number of gradients is reported.
#include <gtest/gtest.h>

#include <string>

#include "core/autograd/node.h"
#include "core/ops/custom_op.h"
#include "core/ops/in_place.h"
#include "grad_test_util.h"

namespace gantry {
namespace {

using namespace gradtest;

// y = a * x^3 + x * b, elementwise, with its own backward:
// dy/dx = 3 a x^2 + b, dy/da = x^3, dy/db = x.
Tensor custom_cubic(const Tensor& x, const Tensor& a, const Tensor& b) {
  return ops::custom_op(
      "CubicBackward", {x, a, b},
      [](ops::CustomOpContext& ctx, const TensorList& in) {
        ctx.save(in[0]);
        ctx.save(in[1]);
        ctx.save(in[2]);
        return TensorList{ops::add(ops::mul(in[1], ops::pow(in[0], 3.f)), ops::mul(in[0], in[2]))};
      },
      [](const TensorList& g, const TensorList& saved) {
        const Tensor &x = saved[0], &a = saved[1], &b = saved[2];
        return TensorList{ops::mul(g[0], ops::add(ops::mul(ops::mul(a, ops::square(x)), 3.f), b)),
                          ops::mul(g[0], ops::pow(x, 3.f)), ops::mul(g[0], x)};
      })[0];
}

TEST(CustomOpGrad, FirstAndSecondOrder) {
  const Fn f = [](const TensorList& in) { return wsum(custom_cubic(in[0], in[1], in[2])); };
  const TensorList same_shapes{input({2, 3}, 1), input({2, 3}, 2), input({2, 3}, 3)};
  EXPECT_EQ(check_grad(f, same_shapes), "");
  EXPECT_EQ(check_gradgrad(f, same_shapes), "");
}

TEST(CustomOpGrad, ForwardRecordsNothingAndOutputsAreOneNode) {
  Tensor x = input({4}, 5);
  Tensor y = custom_cubic(x, constant({4}, 6), constant({4}, 7));
  ASSERT_TRUE(y.grad_fn() != nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "CubicBackward");
  NoGradGuard no_grad;
  EXPECT_TRUE(custom_cubic(x, constant({4}, 6), constant({4}, 7)).grad_fn() == nullptr);
}

TEST(CustomOpGrad, ASavedTensorWrittenInPlaceFailsTheBackward) {
  Tensor x = input({4}, 5);
  Tensor a = constant({4}, 6);
  Tensor y = ops::sum(custom_cubic(x, a, constant({4}, 7)));
  ops::mul_(a, 2.f);
  EXPECT_THROW(autograd::grad({y}, {x}), Error);
}

TEST(CustomOpGrad, ABackwardWithTheWrongNumberOfGradientsIsReported) {
  Tensor x = input({3}, 8);
  Tensor y = ops::custom_op(
      "TwoGradientsBackward", {x}, [](ops::CustomOpContext&, const TensorList& in) { return TensorList{in[0].clone()}; },
      [](const TensorList& g, const TensorList&) { return TensorList{g[0], g[0]}; })[0];
  try {
    autograd::grad({ops::sum(y)}, {x});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one gradient per input (1), found 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gantry
