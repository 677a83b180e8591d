// The r3gan layers (gan/networks/r3gan.h), first and second order: one residual block (1x1,
// grouped 3x3, 1x1 with biased leaky ReLUs; conv3 made non-zero so every weight gets a
// gradient) with respect to its input and every parameter, and the [1,3,3,1] up- and
// down-sampling layers.
#include <gtest/gtest.h>

#include "gan/networks/r3gan.h"
#include "grad_test_util.h"
#include "nn/module.h"

namespace gantry::gradtest {
namespace {

// A block with 4 channels, expansion 2, cardinality 2; its parameters replaced by leaves
// `params` (conv1, bias1, conv2, bias2, conv3) so gradcheck can perturb them.
struct BlockCase {
  nn::ModulePtr block = gan::r3gan::make_block(4, 2, 2, 1.0, RngKey{3, 3});
  TensorList leaves() const {
    return {input({2, 4, 4, 3}, 31), input({8, 4, 1, 1}, 32, -0.5f, 0.5f), input({8}, 33, -0.2f, 0.2f),
            input({8, 4, 3, 3}, 34, -0.3f, 0.3f), input({8}, 35, -0.2f, 0.2f), input({4, 8, 1, 1}, 36, -0.5f, 0.5f)};
  }
  Tensor run(const TensorList& in) const {
    const char* names[] = {"conv1", "bias1", "conv2", "bias2", "conv3"};
    for (int i = 0; i < 5; ++i) block->set(names[i], in[i + 1]);
    return block->forward(in[0]);
  }
};

// Leaky ReLU's kink: a step of 1e-2 moves some of the 48 pre-activations across 0, so the block
// takes a smaller step (1e-3) with the default tolerances.
constexpr Opts kBlock{1e-3, 2e-3, 2e-2};

TEST(R3GANLayersGrad, ResidualBlockFirstOrder) {
  BlockCase c;
  auto fn = [&](const TensorList& in) { return wsum(c.run(in)); };
  EXPECT_EQ(check_grad(fn, c.leaves(), kBlock), "");
}

TEST(R3GANLayersGrad, ResidualBlockSecondOrder) {
  BlockCase c;
  auto fn = [&](const TensorList& in) { return wsum(ops::square(c.run(in))); };
  EXPECT_EQ(check_gradgrad(fn, c.leaves(), kBlock), "");
}

TEST(R3GANLayersGrad, ResamplingFirstAndSecondOrder) {
  auto up = [](const TensorList& in) {
    Tensor y = gan::r3gan::upsample2x(in[0]);
    EXPECT_EQ(y.shape(), (Shape{1, 2, 8, 6}));
    return wsum(ops::square(y));
  };
  auto down = [](const TensorList& in) {
    Tensor y = gan::r3gan::downsample2x(in[0]);
    EXPECT_EQ(y.shape(), (Shape{1, 2, 2, 3}));
    return wsum(ops::square(y));
  };
  EXPECT_EQ(check_grad(up, {input({1, 2, 4, 3}, 41)}), "");
  EXPECT_EQ(check_gradgrad(up, {input({1, 2, 4, 3}, 42)}), "");
  EXPECT_EQ(check_grad(down, {input({1, 2, 4, 6}, 43)}), "");
  EXPECT_EQ(check_gradgrad(down, {input({1, 2, 4, 6}, 44)}), "");
}

}  // namespace
}  // namespace gantry::gradtest
