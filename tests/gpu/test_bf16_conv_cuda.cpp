// bf16 convolutions on cuda:0 (Note [bf16 convolution on CUDA]) against f32 convolutions on the
// CPU of the same operands rounded to bf16: equal up to f32 summation order and the one rounding
// of the result to bf16 (relative 2^-8), in all three directions.
#include <gtest/gtest.h>


#include "backend/conv_math.h"
#include "core/ops/ops.h"
#include "gpu_test_support.h"
#include "support/bf16.h"

namespace gantry::gputest {
namespace {

using testing::round_to_bf16;


TEST(Bf16ConvCuda, AllDirectionsMatchRoundedF32OnTheCpu) {
  GANTRY_REQUIRE_CUDA_DEVICES(1);
  const Device gpu = Device::cuda(0);
  NanFilledAllocations nan_fill;
  Tensor x = ops::randn({8, 16, 16, 16}, RngKey{2, 1});
  Tensor w = ops::mul(ops::randn({32, 16, 4, 4}, RngKey{2, 2}), 0.1f);
  Tensor gy = ops::randn({8, 32, 8, 8}, RngKey{2, 3});
  const ops::Conv2dOptions o = ops::Conv2dOptions::make(2, 1);
  const ConvParams p = o.params();
  Tensor y_want = ops::conv2d(round_to_bf16(x), round_to_bf16(w), {}, o);
  Tensor gx_want = ops::conv2d_backward_data(round_to_bf16(gy), round_to_bf16(w), x.shape(), p);
  Tensor gw_want = ops::conv2d_backward_weights(round_to_bf16(x), round_to_bf16(gy), w.shape(), p);
  testing::ConvMathScope bf16(ConvMath::BF16);
  const Tolerance tol{1e-3, 8e-3};
  EXPECT_TRUE(all_close(ops::conv2d(x.to(gpu), w.to(gpu), {}, o).to(Device::cpu()), y_want, tol, "forward"));
  EXPECT_TRUE(all_close(ops::conv2d_backward_data(gy.to(gpu), w.to(gpu), x.shape(), p).to(Device::cpu()),
                        gx_want, tol, "backward data"));
  EXPECT_TRUE(all_close(ops::conv2d_backward_weights(x.to(gpu), gy.to(gpu), w.shape(), p).to(Device::cpu()),
                        gw_want, tol, "backward weights"));
}

}  // namespace
}  // namespace gantry::gputest
