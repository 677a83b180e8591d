// Conditional batch norm (nn/conditional_batch_norm.h) by finite differences: first order in
// training mode (batch statistics) for the input and both class tables, first and second order
// in eval mode (running statistics; batch norm's own double backward exists only there), and a
// clear error for the second order in training mode.
#include <gtest/gtest.h>

#include "core/ops/in_place.h"
#include "grad_test_util.h"
#include "nn/conditional_batch_norm.h"

namespace gantry {
namespace {

using namespace gradtest;

// f(x, gain, bias) = weighted sum of the layer's output, with the tables set to the inputs.
Fn through(nn::ConditionalBatchNorm2d& cbn, const Tensor& labels) {
  return [&cbn, labels](const TensorList& in) {
    cbn.set("gain", in[1]);
    cbn.set("bias", in[2]);
    return wsum(cbn.forward(in[0], labels));
  };
}

struct Case {
  nn::ConditionalBatchNorm2d cbn{3, 4};
  Tensor labels = indices({2, 0, 3, 2});
  TensorList inputs{input({4, 3, 2, 2}, 1, -2.f, 2.f), input({4, 3}, 2, -0.5f, 0.5f), input({4, 3}, 3)};
};

TEST(ConditionalBatchNormGrad, FirstOrderInTrainingMode) {
  Case c;
  c.cbn.train();
  EXPECT_EQ(check_grad(through(c.cbn, c.labels), c.inputs), "");
}

TEST(ConditionalBatchNormGrad, FirstAndSecondOrderInEvalMode) {
  Case c;
  {
    NoGradGuard no_grad;  // non-trivial running statistics
    ops::copy_(c.cbn.child("bn")->get("running_mean"), ops::from_vector(std::vector<float>{0.3f, -0.2f, 0.1f}, Shape{3}));
    ops::copy_(c.cbn.child("bn")->get("running_var"), ops::from_vector(std::vector<float>{0.5f, 1.5f, 2.f}, Shape{3}));
  }
  c.cbn.eval();
  // Squared so the function is not linear in x and the tables (a linear f has a zero Hessian).
  Fn f = [g = through(c.cbn, c.labels)](const TensorList& in) { return ops::square(g(in)); };
  EXPECT_EQ(check_grad(f, c.inputs), "");
  EXPECT_EQ(check_gradgrad(f, c.inputs), "");
}

TEST(ConditionalBatchNormGrad, SecondOrderInTrainingModeSaysItIsUnsupported) {
  Case c;
  c.cbn.train();
  Fn f = through(c.cbn, c.labels);
  const std::string err = error_of([&] {
    TensorList g = autograd::grad({f(c.inputs)}, {c.inputs[0]}, {}, true, true);
    autograd::grad({ops::sum(ops::square(g[0]))}, {c.inputs[0]});
  });
  EXPECT_NE(err.find("double backward is not supported"), std::string::npos) << err;
}

}  // namespace
}  // namespace gantry
