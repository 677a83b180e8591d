// Softmax and log-softmax (core/ops/softmax.cpp) against finite differences: first and second
// order along the last and a middle dimension, on large inputs, inside attention, and to third
// order, which goes through the backward's own backward (Note [softmax derivatives]).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "grad_test_util.h"

namespace gantry {
namespace {

using namespace gradtest;

struct SoftmaxCase {
  const char* name;
  Shape shape;
  int dim;
  float range;  // inputs in [-range, range)
};

const std::vector<SoftmaxCase>& softmax_cases() {
  static const std::vector<SoftmaxCase> list = {
      {"rows_last_dim", Shape{3, 5}, -1, 2.f},
      {"rank3_last_dim", Shape{2, 3, 4}, 2, 2.f},
      {"rank3_middle_dim", Shape{2, 3, 4}, 1, 2.f},
      {"rank3_first_dim", Shape{3, 2, 2}, 0, 2.f},
      {"one_column", Shape{4, 1}, -1, 2.f},
      {"large_inputs", Shape{2, 6}, -1, 40.f},
  };
  return list;
}

using Softmax = Tensor (*)(const Tensor&, int);

struct SoftmaxParam {
  size_t c;
  bool log;
};

// max_range: the third order's finite differences of log-softmax values near -80 (inputs of
// +-40) are beyond f32's resolution, so that check takes the moderate inputs only.
std::vector<SoftmaxParam> softmax_params(float max_range) {
  std::vector<SoftmaxParam> out;
  for (size_t c = 0; c < softmax_cases().size(); ++c)
    for (bool log : {false, true})
      if (softmax_cases()[c].range <= max_range) out.push_back({c, log});
  return out;
}

std::string softmax_name(const ::testing::TestParamInfo<SoftmaxParam>& info) {
  return std::string(info.param.log ? "log_softmax_" : "softmax_") + softmax_cases()[info.param.c].name;
}

class SoftmaxParamTest : public ::testing::TestWithParam<SoftmaxParam> {
 protected:
  const SoftmaxCase& c() const { return softmax_cases()[GetParam().c]; }
  Softmax fn() const { return GetParam().log ? &ops::log_softmax : &ops::softmax; }
  // Large inputs shifted by a multiple of the step would change the function by more than f32
  // resolves; their finite differences use the default step and tolerances.
  Opts opts() const { return c().range > 10.f ? kDefault : kTight; }
  Tensor x() const { return input(c().shape, 800 + GetParam().c, -c().range, c().range); }
};

class SoftmaxGrad : public SoftmaxParamTest {};
class SoftmaxThirdOrder : public SoftmaxParamTest {};

TEST_P(SoftmaxGrad, FirstOrder) {
  const Softmax f = fn();
  const int dim = c().dim;
  EXPECT_EQ(check_grad([f, dim](const TensorList& in) { return wsum(f(in[0], dim)); }, {x()}, opts()), "");
}

TEST_P(SoftmaxGrad, SecondOrder) {
  const Softmax f = fn();
  const int dim = c().dim;
  EXPECT_EQ(check_gradgrad([f, dim](const TensorList& in) { return wsum(ops::square(f(in[0], dim))); }, {x()}, opts()),
            "");
}

// The gradient's second derivative is the third of softmax: it differentiates the backward's
// backward, in y (through the forward again) and in the incoming gradient.
TEST_P(SoftmaxThirdOrder, ThroughTheBackward) {
  const Softmax f = fn();
  const int dim = c().dim;
  Fn gradient_norm = [f, dim](const TensorList& in) {
    Tensor y = wsum(ops::square(f(in[0], dim)));
    return wsum(ops::square(autograd::grad({y}, {in[0]}, {}, /*retain_graph=*/true, /*create_graph=*/true)[0]));
  };
  EXPECT_EQ(check_grad(gradient_norm, {x()}, opts()), "");
  EXPECT_EQ(check_gradgrad(gradient_norm, {x()}, opts()), "");
}

INSTANTIATE_TEST_SUITE_P(Softmax, SoftmaxGrad, ::testing::ValuesIn(softmax_params(40.f)), softmax_name);
INSTANTIATE_TEST_SUITE_P(Softmax, SoftmaxThirdOrder, ::testing::ValuesIn(softmax_params(2.f)), softmax_name);

// One attention head, softmax(q k^T / sqrt(d)) v, in all three inputs to second order: the
// R1 penalty through a transformer discriminator differentiates exactly this twice.
TEST(SoftmaxGrad, AttentionHead) {
  Tensor q = input({4, 3}, 850), k = input({4, 3}, 851), v = input({4, 2}, 852);
  Fn f = [](const TensorList& in) {
    Tensor scores = ops::mul(ops::matmul(in[0], in[1], false, true), 1.f / std::sqrt(3.f));
    return wsum(ops::tanh(ops::matmul(ops::softmax(scores), in[2])));
  };
  EXPECT_EQ(check_grad(f, {q, k, v}, kTight), "");
  EXPECT_EQ(check_gradgrad(f, {q, k, v}, kTight), "");
}

// cross_entropy is the log-softmax of its logits picked by the labels.
TEST(SoftmaxGrad, CrossEntropyThroughLogSoftmax) {
  Tensor logits = input({4, 5}, 860, -3.f, 3.f);
  Tensor labels = ops::from_vector(std::vector<int64_t>{1, 4, 0, 1}, Shape{4});
  Fn f = [labels](const TensorList& in) { return ops::cross_entropy(in[0], labels); };
  EXPECT_EQ(check_grad(f, {logits}, kTight), "");
  EXPECT_EQ(check_gradgrad(f, {logits}, kTight), "");
}

}  // namespace
}  // namespace gantry
