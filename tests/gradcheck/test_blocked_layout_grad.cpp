// Gradients through chains that stay in oneDNN's blocked layout (Note [blocked activations] in
// core/storage.h): 16-channel convolutions with batch norm and tanh between them, so
// every backward op reads and writes blocked tensors, and the same checks with every
// convolution on plain data (ConvLayout::Plain). Sized so the blocked path is taken (the unit
// test BlockedActivations.ChainStaysBlockedAndMatchesPlainLayout asserts that it is).
#include <gtest/gtest.h>

#include "backend/cpu/onednn_context.h"
#include "gradcheck/grad_test_util.h"
#include "support/conv_layout_scope.h"

namespace gantry::gradtest {
namespace {

using ops::Conv2dOptions;

class BlockedLayoutGrad : public ::testing::TestWithParam<cpu::ConvLayout> {
 protected:
  testing::ConvLayoutScope scope_{GetParam()};
};

TEST_P(BlockedLayoutGrad, ConvBatchNormTanhConvFirstOrder) {
  Fn f = [](const TensorList& in) {
    Tensor h = ops::conv2d(in[0], in[1], {}, Conv2dOptions::make(1, 1));
    h = ops::tanh(ops::batch_norm(h, in[3], in[4], {}, {}, true, 0.1f, 1e-5f));
    return wsum(ops::conv_transpose2d(h, in[2], {}, Conv2dOptions::make(2, 1)));
  };
  EXPECT_EQ(check_grad(f, {input({2, 16, 4, 4}, 1), input({16, 16, 3, 3}, 2, -0.3f, 0.3f),
                           input({16, 16, 4, 4}, 3, -0.3f, 0.3f), input({16}, 4, 0.5f, 1.5f),
                           input({16}, 5)}),
            "");
}

// Batch norm in training mode has no second derivative; tanh keeps the chain non-linear.
TEST_P(BlockedLayoutGrad, ConvTanhConvSecondOrder) {
  Fn f = [](const TensorList& in) {
    Tensor h = ops::tanh(ops::conv2d(in[0], in[1], {}, Conv2dOptions::make(1, 1)));
    return wsum(ops::square(ops::conv2d(h, in[2], {}, Conv2dOptions::make(2, 1))));
  };
  EXPECT_EQ(check_gradgrad(f, {input({1, 16, 4, 4}, 6), input({16, 16, 3, 3}, 7, -0.1f, 0.1f),
                               input({16, 16, 3, 3}, 8, -0.1f, 0.1f)}),
            "");
}

// 65 input channels (StyleGAN2's minibatch-std conv: 64 + 1) pad to 72 or 80 in the blocked
// layouts, little enough that Auto takes the blocked primitive (Note [conv layout]): its padded
// channels must not leak into any gradient.
TEST_P(BlockedLayoutGrad, SlightlyPaddedChannelsFirstOrder) {
  Fn f = [](const TensorList& in) {
    return wsum(ops::tanh(ops::conv2d(in[0], in[1], in[2], Conv2dOptions::make(1, 1))));
  };
  EXPECT_EQ(check_grad(f, {input({1, 65, 3, 3}, 9), input({16, 65, 3, 3}, 10, -0.1f, 0.1f), input({16}, 11)}), "");
}

TEST_P(BlockedLayoutGrad, SlightlyPaddedChannelsSecondOrder) {
  Fn f = [](const TensorList& in) {
    return wsum(ops::square(ops::tanh(ops::conv2d(in[0], in[1], {}, Conv2dOptions::make(1, 0)))));
  };
  EXPECT_EQ(check_gradgrad(f, {input({1, 65, 2, 2}, 12), input({16, 65, 1, 1}, 13, -0.2f, 0.2f)}), "");
}

INSTANTIATE_TEST_SUITE_P(Layouts, BlockedLayoutGrad,
                         ::testing::Values(cpu::ConvLayout::Auto, cpu::ConvLayout::Plain),
                         [](const ::testing::TestParamInfo<cpu::ConvLayout>& info) {
                           return info.param == cpu::ConvLayout::Auto ? "Auto" : "Plain";
                         });

}  // namespace
}  // namespace gantry::gradtest
