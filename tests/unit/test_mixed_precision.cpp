// Mixed precision of the dense products beyond convolutions (backend/conv_math.h): bf16 matrix
// products on the CPU (Note [bf16 matmul]) read bf16 operands and accumulate in f32; f16 math is
// refused on the CPU with a reason instead of silently running f32.
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

double max_abs_difference(const Tensor& a, const Tensor& b) {
  std::vector<float> x = a.to_vector(), y = b.to_vector();
  double diff = 0;
  for (size_t i = 0; i < x.size(); ++i) diff = std::max(diff, std::abs(double(x[i]) - y[i]));
  return diff;
}

TEST(MixedPrecision, Bf16MatmulReadsBf16OperandsAndAccumulatesInF32) {
  if (!cpu::onednn_has_native_bf16()) GTEST_SKIP() << "this CPU has no native bf16 (avx512_bf16 or AMX)";
  Tensor a = ops::randn({33, 70}, RngKey{2, 1});
  Tensor b = ops::randn({50, 70}, RngKey{2, 2});  // used transposed: (70, 50)
  Tensor bias = ops::randn({50}, RngKey{2, 3});
  Tensor f32 = ops::linear(a, b, bias);
  Tensor by_hand = ops::linear(round_to_bf16(a), round_to_bf16(b), bias);
  MathScope bf16(ConvMath::BF16);
  Tensor mixed = ops::linear(a, b, bias);
  EXPECT_LT(max_abs_difference(mixed, by_hand), 1e-4);  // f32 summation order only
  EXPECT_GT(max_abs_difference(mixed, f32), 1e-3);      // it did round
  Tensor at = ops::matmul(ops::transpose(a, 0, 1), b, /*trans_a=*/true, /*trans_b=*/true);
  EXPECT_LT(max_abs_difference(ops::add(at, bias), mixed), 1e-4);
}

TEST(MixedPrecision, F16IsRefusedOnTheCpuWithAReason) {
  EXPECT_NE(conv_math_unavailable(ConvMath::F16, Device::cpu()).find("CUDA devices only"), std::string::npos);
  EXPECT_EQ(conv_math_unavailable(ConvMath::F16, Device::cuda(0)), "");
  MathScope f16(ConvMath::F16);
  try {
    ops::matmul(ops::ones({2, 3}), ops::ones({3, 4}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("matmul: f16 mixed precision runs on CUDA devices only"), std::string::npos) << e.what();
  }
}

TEST(MixedPrecision, Names) {
  EXPECT_EQ(conv_math_name(ConvMath::F32), "f32");
  EXPECT_EQ(conv_math_name(ConvMath::BF16), "bf16");
  EXPECT_EQ(conv_math_name(ConvMath::F16), "f16");
  EXPECT_EQ(conv_math_operand_type(ConvMath::F16), DType::F16);
  EXPECT_EQ(conv_math_operand_type(ConvMath::BF16), DType::BF16);
}

}  // namespace
}  // namespace gantry
