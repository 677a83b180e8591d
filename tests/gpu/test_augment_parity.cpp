// Differentiable augmentation on cuda:0 against the CPU: translate2d forward, backward and
// double backward; the augmentation parameters drawn on the device (Philox keyed by example)
// equal the CPU's; the whole pipeline's output and input gradients agree. Skipped without a
// CUDA device.
#include <gtest/gtest.h>

#include "augment/diff_augment.h"
#include "core/autograd/engine.h"
#include "core/ops/ops.h"
#include "gpu_test_support.h"

namespace gantry::gputest {
namespace {

class AugmentParity : public ::testing::Test {
 protected:
  void SetUp() override { GANTRY_REQUIRE_CUDA_DEVICES(1); }
};

struct Results {
  Tensor y, grad, grad_grad;
};

// y = translate2d(x * x, shift); the gradient of sum(y * w) and of sum(grad * v) (fixed w, v).
Results translate_on(Device device) {
  const Shape shape{3, 2, 7, 9};
  Tensor x = ops::from_vector(values(shape.numel(), 100), shape, device);
  x.set_requires_grad(true);
  Tensor shift = ops::from_vector(std::vector<int64_t>{1, -2, 0, 0, -4, 9}, Shape{3, 2}, device);
  Results r;
  r.y = ops::translate2d(x * x, shift);
  Tensor w = ops::from_vector(values(shape.numel(), 200), shape, device);
  r.grad = autograd::grad({ops::sum(r.y * w)}, {x}, {}, true, true)[0];
  Tensor v = ops::from_vector(values(shape.numel(), 300), shape, device);
  r.grad_grad = autograd::grad({ops::sum(r.grad * v)}, {x})[0];
  return r;
}

TEST_F(AugmentParity, Translate2dFirstAndSecondOrder) {
  Results cpu = translate_on(Device::cpu());
  Results gpu;
  {
    NanFilledAllocations nan_fill;  // an element the kernel does not write fails
    gpu = translate_on(Device::cuda(0));
  }
  EXPECT_TRUE(all_close(gpu.y, cpu.y, {1e-6, 1e-6}, "translate2d forward"));
  EXPECT_TRUE(all_close(gpu.grad, cpu.grad, {1e-5, 1e-5}, "translate2d backward"));
  EXPECT_TRUE(all_close(gpu.grad_grad, cpu.grad_grad, {1e-5, 1e-5}, "translate2d double backward"));
}

TEST_F(AugmentParity, PipelineDrawsAndAppliesAsTheCpu) {
  augment::AugmentPolicy policy;
  policy.brightness = policy.saturation = policy.contrast = policy.translation = policy.cutout = true;
  const Shape shape{6, 3, 16, 16};
  auto run = [&](Device device) {
    Tensor x = ops::from_vector(values(shape.numel(), 400), shape, device);
    x.set_requires_grad(true);
    augment::AugmentParams p = augment::draw_params(policy, 0.6, shape, RngKey{21, 22}, 40, device);
    Tensor y = augment::apply(x, p);
    Tensor w = ops::from_vector(values(shape.numel(), 500), shape, device);
    Tensor g = autograd::grad({ops::sum(ops::tanh(y) * w)}, {x})[0];
    return std::vector<Tensor>{p.brightness, p.saturation, p.contrast, p.shift.to(DType::F32), p.cutout, y, g};
  };
  std::vector<Tensor> cpu = run(Device::cpu());
  std::vector<Tensor> gpu = run(Device::cuda(0));
  const char* names[] = {"brightness", "saturation", "contrast", "shift", "cutout", "output", "input gradient"};
  for (size_t i = 0; i < cpu.size(); ++i)
    EXPECT_TRUE(all_close(gpu[i], cpu[i], {1e-5, 1e-5}, names[i]));
}

}  // namespace
}  // namespace gantry::gputest
