// f16 convolutions and 16-bit matmuls on cuda:0 (Note [bf16 convolution on CUDA], Note [16-bit
// matmul]) against f32 math on the CPU of the same operands rounded by hand; and the EMA update
// on the device (Note [EMA on the device]) against the CPU one. Skipped without a device.
#include <gtest/gtest.h>

#include "backend/conv_math.h"
#include "core/autograd/grad_mode.h"
#include "core/ops/in_place.h"
#include "core/ops/ops.h"
#include "gpu_test_support.h"
#include "nn/ema.h"
#include "nn/linear.h"
#include "support/bf16.h"

namespace gantry::gputest {
namespace {

using MathScope = testing::ConvMathScope;

Tensor round_to(ConvMath math, const Tensor& t) {
  return math == ConvMath::BF16 ? testing::round_to_bf16(t) : t.to(DType::F16).to(DType::F32);
}

TEST(MixedPrecisionCuda, F16ConvolutionMatchesRoundedF32OnTheCpu) {
  GANTRY_REQUIRE_CUDA_DEVICES(1);
  const Device gpu = Device::cuda(0);
  NanFilledAllocations nan_fill;
  Tensor x = ops::randn({8, 16, 16, 16}, RngKey{3, 1});
  Tensor w = ops::mul(ops::randn({32, 16, 4, 4}, RngKey{3, 2}), 0.1f);
  Tensor gy = ops::randn({8, 32, 8, 8}, RngKey{3, 3});
  const ops::Conv2dOptions o = ops::Conv2dOptions::make(2, 1);
  const ConvParams p = o.params();
  const ConvMath f16 = ConvMath::F16;
  Tensor y_want = ops::conv2d(round_to(f16, x), round_to(f16, w), {}, o);
  Tensor gx_want = ops::conv2d_backward_data(round_to(f16, gy), round_to(f16, w), x.shape(), p);
  Tensor gw_want = ops::conv2d_backward_weights(round_to(f16, x), round_to(f16, gy), w.shape(), p);
  MathScope math(f16);
  const Tolerance tol{1e-3, 2e-3};  // the result is rounded to f16 once (relative 2^-11)
  EXPECT_TRUE(all_close(ops::conv2d(x.to(gpu), w.to(gpu), {}, o).to(Device::cpu()), y_want, tol, "forward"));
  EXPECT_TRUE(all_close(ops::conv2d_backward_data(gy.to(gpu), w.to(gpu), x.shape(), p).to(Device::cpu()),
                        gx_want, tol, "backward data"));
  EXPECT_TRUE(all_close(ops::conv2d_backward_weights(x.to(gpu), gy.to(gpu), w.shape(), p).to(Device::cpu()),
                        gw_want, tol, "backward weights"));
}

TEST(MixedPrecisionCuda, HalfMatmulsWriteF32) {
  GANTRY_REQUIRE_CUDA_DEVICES(1);
  const Device gpu = Device::cuda(0);
  NanFilledAllocations nan_fill;
  Tensor a = ops::randn({33, 70}, RngKey{4, 1});
  Tensor b = ops::randn({50, 70}, RngKey{4, 2});
  Tensor bias = ops::randn({50}, RngKey{4, 3});
  for (ConvMath math : {ConvMath::BF16, ConvMath::F16}) {
    Tensor want = ops::linear(round_to(math, a), round_to(math, b), bias);
    MathScope scope(math);
    Tensor got = ops::linear(a.to(gpu), b.to(gpu), bias.to(gpu)).to(Device::cpu());
    EXPECT_TRUE(all_close(got, want, Tolerance{1e-4, 1e-4}, conv_math_name(math)));  // f32 output
  }
}

TEST(MixedPrecisionCuda, EmaUpdatesOnTheDeviceAsOnTheCpu) {
  GANTRY_REQUIRE_CUDA_DEVICES(1);
  for (double decay : {0.25, 0.999}) {
    nn::Linear cpu_net(7, 5, true, RngKey{6, 0});
    auto gpu_net = cpu_net.clone();
    gpu_net->to(Device::cuda(0));
    nn::Ema cpu_ema = nn::Ema::with_decay(cpu_net, decay), gpu_ema = nn::Ema::with_decay(*gpu_net, decay);
    NoGradGuard no_grad;  // writes into parameters in place
    for (auto* net : {static_cast<nn::Module*>(&cpu_net), gpu_net.get()})
      for (auto& [name, p] : net->named_parameters())
        ops::copy_(p, ops::randn(p.shape(), RngKey{7, static_cast<uint64_t>(p.numel())}).to(p.device()));
    cpu_ema.update(cpu_net);
    gpu_ema.update(*gpu_net);
    auto want = cpu_ema.module().named_parameters(), got = gpu_ema.module().named_parameters();
    for (size_t i = 0; i < want.size(); ++i)  // the kernels are built without FMA contraction
      EXPECT_EQ(got[i].second.to_vector(), want[i].second.to_vector()) << want[i].first;
  }
}

}  // namespace
}  // namespace gantry::gputest
