// Mixed second derivatives d/dθ |d f(x; θ)/dx|^2: the gradient with respect to the INPUT alone
// is built with create_graph (the weights are not asked for, so every backward runs with only
// its input gradient needed), then differentiated with respect to the WEIGHTS. Path length
// regularisation does exactly this; gradgradcheck asks for every gradient at once and so never
// runs a backward with the weight's gradient unneeded.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grad_test_util.h"
#include "nn/bias_act.h"
#include "nn/conv2d_resample.h"
#include "nn/equalized_linear.h"
#include "nn/modulated_conv2d.h"
#include "nn/noise_injection.h"

namespace gantry {
namespace {

using namespace gradtest;

// f(θ) = sum(c * (d wsum(out(x; θ)) / dx)^2): input gradient only, then weights.
template <typename Out>
std::string check_mixed(Out&& out, const Tensor& x, const TensorList& weights, Opts o = kTight) {
  auto f = [&](const TensorList& w) {
    Tensor gx = autograd::grad({wsum(out(x, w))}, {x}, {}, true, true)[0];
    return wsum(ops::square(gx), 77);
  };
  return check_grad(f, weights, o);
}

TEST(MixedSecondOrderGrad, Linear) {
  EXPECT_EQ(check_mixed([](const Tensor& x, const TensorList& w) { return ops::tanh(ops::linear(x, w[0])); },
                        input({3, 4}, 1), {input({2, 4}, 2)}),
            "");
}

TEST(MixedSecondOrderGrad, Matmul) {
  EXPECT_EQ(check_mixed([](const Tensor& x, const TensorList& w) { return ops::tanh(ops::matmul(x, w[0], false, true)); },
                        input({3, 4}, 1), {input({2, 4}, 2)}),
            "");
}

TEST(MixedSecondOrderGrad, Square) {
  EXPECT_EQ(check_mixed([](const Tensor& x, const TensorList& w) { return ops::square(ops::mul(x, w[0])); },
                        input({3, 4}, 1), {input({3, 4}, 2)}),
            "");
}

TEST(MixedSecondOrderGrad, EqualizedLinear) {
  nn::EqualizedLinearOptions o;
  o.lr_mul = 0.5f;
  o.activation = nn::BiasActivation::LeakyRelu;
  nn::EqualizedLinear layer(4, 3, o);
  EXPECT_EQ(check_mixed(
                [&](const Tensor& x, const TensorList& w) {
                  layer.set("weight", w[0]);
                  layer.set("bias", w[1]);
                  return ops::tanh(layer(x));
                },
                input({3, 4}, 1), {input({3, 4}, 2), input({3}, 3)}),
            "");
}

TEST(MixedSecondOrderGrad, Conv2d) {
  EXPECT_EQ(check_mixed([](const Tensor& x, const TensorList& w) {
                          return ops::tanh(ops::conv2d(x, w[0], {}, ops::Conv2dOptions::make(1, 1)));
                        },
                        input({2, 2, 4, 4}, 1), {input({2, 2, 3, 3}, 2)}),
            "");
}

TEST(MixedSecondOrderGrad, Conv2dResampleUp2) {
  Tensor f = ops::fir_filter({1, 3, 3, 1});
  EXPECT_EQ(check_mixed([&](const Tensor& x, const TensorList& w) {
                          return ops::tanh(nn::conv2d_resample(x, w[0], f, 2, 1, 1));
                        },
                        input({2, 2, 3, 3}, 1), {input({2, 2, 3, 3}, 2)}),
            "");
}

struct ModConvCase {
  const char* name;
  int kernel;
  bool demodulate;
  int up;
};

TEST(MixedSecondOrderGrad, ModulatedConv2dLatentGradient) {
  for (const ModConvCase& c : {ModConvCase{"demodulated 3x3", 3, true, 1}, ModConvCase{"up 2", 3, true, 2},
                               ModConvCase{"toRGB 1x1", 1, false, 1}}) {
    SCOPED_TRACE(c.name);
    nn::ModulatedConv2dOptions o;
    o.demodulate = c.demodulate;
    o.up = c.up;
    nn::ModulatedConv2d layer(2, 2, c.kernel, 3, o);
    nn::Module& affine = *layer.child("affine");
    const Tensor x = constant({2, 2, 3, 3}, 7);
    EXPECT_EQ(check_mixed(
                  [&](const Tensor& w, const TensorList& p) {
                    layer.set("weight", p[0]);
                    affine.set("weight", p[1]);
                    return ops::tanh(layer.forward_with_style(x, w));
                  },
                  input({2, 3}, 8), {input({2, 2, c.kernel, c.kernel}, 9), input({2, 3}, 10)}),
              "");
  }
}

}  // namespace
}  // namespace gantry
