// Mixed-precision convolutions (Note [bf16 convolution]): under ConvMath::BF16 each direction
// reads its two operands as bf16 and accumulates in f32; an activation it writes is bf16 (Note
// [bf16 activations]), the weights' gradient f32. Checked against f32 math on operands rounded to
// bf16 by hand (equal up to f32 summation order and the output's rounding to bf16, so bf16 really
// was used and nothing else was lost), and against plain f32 math (close, but not equal).
#include <gtest/gtest.h>

#include <cmath>

#include "backend/conv_math.h"
#include "backend/cpu/onednn_context.h"
#include "core/ops/ops.h"
#include "support/bf16.h"

namespace gantry {
namespace {

using testing::round_to_bf16;
using MathScope = testing::ConvMathScope;

// max |a - b| / max |b|
double relative_difference(const Tensor& a, const Tensor& b) {
  std::vector<float> x = a.to_vector(), y = b.to_vector();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, std::abs(double(x[i]) - y[i]));
    scale = std::max(scale, std::abs(double(y[i])));
  }
  return diff / scale;
}

// Every value of `got` is a bf16 value within half a bf16 step (2^-8 relative) of `want`, plus
// 1e-5 of want's largest value for the f32 summation order: `want` rounded to bf16.
void expect_bf16_rounding_of(const Tensor& got, const Tensor& want) {
  const std::vector<float> g = got.to_vector(), w = want.to_vector(), rounded = round_to_bf16(got).to_vector();
  double scale = 0;
  for (float v : w) scale = std::max(scale, std::abs(double(v)));
  ASSERT_GT(scale, 0.0);
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_EQ(g[i], rounded[i]) << "[" << i << "] is not a bf16 value";
    ASSERT_LE(std::abs(double(g[i]) - w[i]), std::ldexp(std::abs(double(w[i])), -8) + 1e-5 * scale) << "[" << i << "]";
  }
}

class Bf16Conv : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu::onednn_has_native_bf16()) GTEST_SKIP() << "this CPU has no native bf16 (avx512_bf16 or AMX)";
  }
  // A DCGAN-like layer: 16 -> 32 channels, 4x4 kernel, stride 2, padding 1, on 8 x 16 x 16.
  Tensor x = ops::randn({8, 16, 16, 16}, RngKey{1, 1});
  Tensor w = ops::mul(ops::randn({32, 16, 4, 4}, RngKey{1, 2}), 0.1f);
  Tensor gy = ops::randn({8, 32, 8, 8}, RngKey{1, 3});
  ops::Conv2dOptions o = ops::Conv2dOptions::make(2, 1);
};

TEST_F(Bf16Conv, ForwardReadsBf16OperandsAndAccumulatesInF32) {
  Tensor f32 = ops::conv2d(x, w, {}, o);
  Tensor by_hand = ops::conv2d(round_to_bf16(x), round_to_bf16(w), {}, o);
  MathScope bf16(ConvMath::BF16);
  Tensor mixed = ops::conv2d(x, w, {}, o);
  // 32 channels: whole blocks (8 or 16)
  EXPECT_EQ(mixed.storage()->blocked_bf16(), testing::bf16_conv_writes_blocked_activations());
  expect_bf16_rounding_of(mixed, by_hand);
  EXPECT_GT(relative_difference(mixed, f32), 1e-5);  // it did round
  EXPECT_LT(relative_difference(mixed, f32), 2e-2);
}

TEST_F(Bf16Conv, BackwardDataAndWeights) {
  const ConvParams p = o.params();
  Tensor gx_f32 = ops::conv2d_backward_data(gy, w, x.shape(), p);
  Tensor gw_f32 = ops::conv2d_backward_weights(x, gy, w.shape(), p);
  Tensor gx_hand = ops::conv2d_backward_data(round_to_bf16(gy), round_to_bf16(w), x.shape(), p);
  Tensor gw_hand = ops::conv2d_backward_weights(round_to_bf16(x), round_to_bf16(gy), w.shape(), p);
  MathScope bf16(ConvMath::BF16);
  Tensor gx = ops::conv2d_backward_data(gy, w, x.shape(), p);
  Tensor gw = ops::conv2d_backward_weights(x, gy, w.shape(), p);
  EXPECT_EQ(gx.storage()->blocked_bf16(), testing::bf16_conv_writes_blocked_activations());
  expect_bf16_rounding_of(gx, gx_hand);
  EXPECT_LT(relative_difference(gw, gw_hand), 1e-5);  // f32, for the f32 master weights
  EXPECT_LT(relative_difference(gx, gx_f32), 2e-2);
  EXPECT_LT(relative_difference(gw, gw_f32), 2e-2);
}

}  // namespace
}  // namespace gantry
