// Gradchecks of the StyleGAN2 layers, first and second order, with respect to their inputs and
// parameters: R1 differentiates the discriminator (equalised convolutions with FIR down-sampling,
// minibatch std) twice, and path-length regularisation differentiates the generator (modulated
// convolutions with up-sampling, noise) twice. The parameters are set from the checked inputs on
// every call, so finite differences perturb them through the module.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grad_test_util.h"
#include "nn/equalized_conv2d.h"
#include "nn/equalized_linear.h"
#include "nn/minibatch_std.h"
#include "nn/modulated_conv2d.h"
#include "nn/noise_injection.h"

namespace gantry {
namespace {

using namespace gradtest;

// Runs both orders on f(inputs); the second on weighted_sum(square(.)) of the same output, so
// layers that are linear in some input still have every Hessian block.
template <typename Out>
void check_both_orders(Out&& out, const TensorList& inputs) {
  auto first = [&](const TensorList& in) { return wsum(out(in)); };
  auto second = [&](const TensorList& in) { return wsum(ops::square(out(in))); };
  EXPECT_EQ(check_grad(first, inputs), "");
  EXPECT_EQ(check_gradgrad(second, inputs), "");
}

TEST(StyleGanLayersGrad, EqualizedLinearLrMul) {
  nn::EqualizedLinearOptions o;
  o.lr_mul = 0.5f;
  nn::EqualizedLinear layer(4, 3, o);
  check_both_orders(
      [&](const TensorList& in) {
        layer.set("weight", in[1]);
        layer.set("bias", in[2]);
        return layer(in[0]);
      },
      {input({3, 4}, 1), input({3, 4}, 2), input({3}, 3)});
}

TEST(StyleGanLayersGrad, EqualizedConv2dFirDown2) {
  nn::EqualizedConv2dOptions o;
  o.down = 2;
  nn::EqualizedConv2d layer(2, 2, 3, o);
  check_both_orders(
      [&](const TensorList& in) {
        layer.set("weight", in[1]);
        layer.set("bias", in[2]);
        return ops::tanh(layer(in[0]));
      },
      {input({2, 2, 6, 4}, 4), input({2, 2, 3, 3}, 5), input({2}, 6)});
}

struct ModConvCase {
  const char* name;
  int kernel;
  bool demodulate;
  int up;
};

TEST(StyleGanLayersGrad, ModulatedConv2dEveryForm) {
  for (const ModConvCase& c : {ModConvCase{"demodulated 3x3", 3, true, 1}, ModConvCase{"up 2", 3, true, 2},
                               ModConvCase{"toRGB 1x1", 1, false, 1}}) {
    SCOPED_TRACE(c.name);
    nn::ModulatedConv2dOptions o;
    o.demodulate = c.demodulate;
    o.up = c.up;
    nn::ModulatedConv2d layer(2, 2, c.kernel, 3, o);
    nn::Module& affine = *layer.child("affine");
    check_both_orders(
        [&](const TensorList& in) {
          layer.set("weight", in[2]);
          affine.set("weight", in[3]);
          return layer.forward_with_style(in[0], in[1]);
        },
        {input({2, 2, 3, 3}, 7), input({2, 3}, 8), input({2, 2, c.kernel, c.kernel}, 9), input({2, 3}, 10)});
  }
}

// Groups of 4 examples spread over [-2, 2]: a group's standard deviation stays well away from 0,
// where sqrt(variance + 1e-8) bends too sharply for finite differences with step 1e-2.
TEST(StyleGanLayersGrad, MinibatchStd) {
  nn::MinibatchStd layer(4, 2);
  check_both_orders([&](const TensorList& in) { return layer(in[0]); }, {input({8, 4, 2, 2}, 11, -2.f, 2.f)});
}

TEST(StyleGanLayersGrad, NoiseInjection) {
  nn::NoiseInjection layer;
  layer.set_rng(RngKey{5, 6}, 3);
  check_both_orders(
      [&](const TensorList& in) {
        layer.set("noise_strength", in[1]);
        return layer(in[0]);
      },
      {input({2, 2, 3, 3}, 12), input({}, 13)});
}

}  // namespace
}  // namespace gantry
