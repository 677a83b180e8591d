// Bilinear grid sampling on cuda:0 against the CPU, both padding modes: the forward, the input
// gradient (the atomics' scatter), the grid gradient and the double backward in the input.
// Skipped without a CUDA device.
#include <gtest/gtest.h>

#include "core/autograd/engine.h"
#include "core/ops/ops.h"
#include "gpu_test_support.h"

namespace gantry::gputest {
namespace {

class GridSampleParity : public ::testing::TestWithParam<GridPadding> {
 protected:
  void SetUp() override { GANTRY_REQUIRE_CUDA_DEVICES(1); }
};

struct Results {
  Tensor y, grad_x, grad_grid, grad_grad;
};

// y = grid_sample(x * x, grid) with an output larger than the input (taps shared, so the
// adjoint's atomics collide); gradients of sum(y * w) and of sum(grad_x * v).
Results sample_on(Device device, GridPadding padding) {
  const Shape xs{3, 2, 7, 9}, gs{3, 11, 13, 2}, ys{3, 2, 11, 13};
  Tensor x = ops::from_vector(values(xs.numel(), 600), xs, device);
  Tensor grid = ops::from_vector(values(gs.numel(), 601, -1.8f, 1.8f), gs, device);
  x.set_requires_grad(true);
  grid.set_requires_grad(true);
  Results r;
  r.y = ops::grid_sample(x * x, grid, padding);
  Tensor w = ops::from_vector(values(ys.numel(), 602), ys, device);
  std::vector<Tensor> g = autograd::grad({ops::sum(r.y * w)}, {x, grid}, {}, true, true);
  r.grad_x = g[0];
  r.grad_grid = g[1];
  Tensor v = ops::from_vector(values(xs.numel(), 603), xs, device);
  r.grad_grad = autograd::grad({ops::sum(r.grad_x * v)}, {x})[0];
  return r;
}

TEST_P(GridSampleParity, ForwardBackwardAndDoubleBackward) {
  Results cpu = sample_on(Device::cpu(), GetParam());
  Results gpu;
  {
    NanFilledAllocations nan_fill;  // an element the kernels do not write fails
    gpu = sample_on(Device::cuda(0), GetParam());
  }
  EXPECT_TRUE(all_close(gpu.y, cpu.y, {1e-5, 1e-5}, "grid_sample forward"));
  EXPECT_TRUE(all_close(gpu.grad_x, cpu.grad_x, {1e-4, 1e-5}, "grid_sample input gradient"));
  EXPECT_TRUE(all_close(gpu.grad_grid, cpu.grad_grid, {1e-4, 1e-4}, "grid_sample grid gradient"));
  EXPECT_TRUE(all_close(gpu.grad_grad, cpu.grad_grad, {1e-4, 1e-5}, "grid_sample double backward"));
}

INSTANTIATE_TEST_SUITE_P(Padding, GridSampleParity, ::testing::Values(GridPadding::kZeros, GridPadding::kReflection),
                         [](const ::testing::TestParamInfo<GridPadding>& info) {
                           return info.param == GridPadding::kZeros ? std::string("Zeros") : std::string("Reflection");
                         });

}  // namespace
}  // namespace gantry::gputest
