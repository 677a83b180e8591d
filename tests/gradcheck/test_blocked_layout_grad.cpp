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

INSTANTIATE_TEST_SUITE_P(Layouts, BlockedLayoutGrad,
                         ::testing::Values(cpu::ConvLayout::Auto, cpu::ConvLayout::Plain),
                         [](const ::testing::TestParamInfo<cpu::ConvLayout>& info) {
                           return info.param == cpu::ConvLayout::Auto ? "Auto" : "Plain";
                         });

}  // namespace
}  // namespace gantry::gradtest
