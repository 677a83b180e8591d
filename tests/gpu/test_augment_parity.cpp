// Differentiable augmentation on cuda:0 against the CPU: the augmentation parameters drawn on the
// device (Philox keyed by example) equal the CPU's, and the whole pipeline's output and input
// gradients agree (translate2d itself is a case of the op harness). Skipped without a CUDA
// device.
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

TEST_F(AugmentParity, PipelineDrawsAndAppliesAsTheCpu) {
  augment::AugmentPolicy policy;
  policy.brightness = policy.saturation = policy.contrast = policy.translation = policy.cutout = true;
  const Shape shape{6, 3, 16, 16};
  auto run = [&](Device device) {
    Tensor x = ops::from_vector(uniform_values(shape.numel(), 400), shape, device);
    x.set_requires_grad(true);
    augment::AugmentParams p = augment::draw_params(policy, 0.6, shape, RngKey{21, 22}, 40, device);
    Tensor y = augment::apply(x, p);
    Tensor w = ops::from_vector(uniform_values(shape.numel(), 500), shape, device);
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
