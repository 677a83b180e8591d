// The fused optimizer kernels (backend/cuda/fused_optimizer.h) refuse missing state before
// launching, and the nn optimizers on the device follow the CPU's trajectory (the kernels
// themselves are cases of the op harness, tests/gpu/test_backend_ops_parity.cpp). Skipped
// without a device.
#include <gtest/gtest.h>

#include <vector>

#include "backend/cuda/fused_optimizer.h"
#include "backend/optimizer_math.h"
#include "core/ops/ops.h"
#include "gpu_test_support.h"
#include "nn/adam.h"
#include "nn/adamw.h"
#include "nn/rmsprop.h"
#include "nn/sgd.h"

namespace gantry::gputest {
namespace {

constexpr int64_t kN = 5000;
constexpr Tolerance kUpdate{1e-6, 1e-5};  // FMA contraction on the device, none on the host

float* device_ptr(const Tensor& t) { return static_cast<float*>(t.raw_data()); }
Tensor on_device(const std::vector<float>& v) {
  return ops::from_vector(v, Shape{static_cast<int64_t>(v.size())}, Device::cuda(0));
}

class FusedOptimizer : public ::testing::Test {
 protected:
  void SetUp() override { GANTRY_REQUIRE_CUDA_DEVICES(1); }
};

TEST_F(FusedOptimizer, RefusesMissingStateBeforeLaunching) {
  Tensor p = on_device(uniform_values(8, 4));
  AdamMath math{};
  math.amsgrad = true;
  EXPECT_THROW(cuda::fused_adam(0, math, device_ptr(p), device_ptr(p), device_ptr(p),
                                device_ptr(p), nullptr, 8),
               Error);
  SgdMath sgd{0.1f, 0.9f, 1.f, 0.f, false, true};
  EXPECT_THROW(cuda::fused_sgd(0, sgd, device_ptr(p), device_ptr(p), nullptr, 8), Error);
}

// The nn optimizers on cuda:0 (through Backend::adam_update etc.) follow the same trajectory as
// on the CPU, state included.
template <typename Opt, typename Options>
void expect_optimizer_parity(const char* name, Options o) {
  Tensor cpu_param = ops::from_vector(uniform_values(kN, 3), Shape{kN});
  Tensor gpu_param = cpu_param.to(Device::cuda(0));
  cpu_param.set_requires_grad(true);
  gpu_param.set_requires_grad(true);
  Opt on_cpu({cpu_param}, o), on_gpu({gpu_param}, o);
  for (int step = 1; step <= 3; ++step) {
    Tensor g = ops::from_vector(uniform_values(kN, 20 + step), Shape{kN});
    cpu_param.set_grad(g);
    gpu_param.set_grad(g.to(Device::cuda(0)));
    on_cpu.step();
    on_gpu.step();
  }
  EXPECT_TRUE(all_close(gpu_param.to(Device::cpu()), cpu_param, kUpdate, name));
  auto cpu_state = on_cpu.state_tensors(), gpu_state = on_gpu.state_tensors();
  ASSERT_EQ(cpu_state.size(), gpu_state.size()) << name;
  for (size_t i = 0; i < cpu_state.size(); ++i)
    EXPECT_TRUE(all_close(gpu_state[i].second.to(Device::cpu()), cpu_state[i].second, kUpdate,
                          std::string(name) + " " + cpu_state[i].first));
}

TEST_F(FusedOptimizer, NnOptimizersOnTheDeviceMatchTheCpu) {
  nn::AdamOptions ams;
  ams.amsgrad = true;
  expect_optimizer_parity<nn::Adam>("adam (amsgrad)", ams);
  expect_optimizer_parity<nn::AdamW>("adamw", nn::AdamW::default_options());
  expect_optimizer_parity<nn::RmsProp>("rmsprop", nn::RmsPropOptions{0.01, 0.9, 1e-8, 0.0, 0.9, true});
  expect_optimizer_parity<nn::Sgd>("sgd", nn::SgdOptions{0.1, 0.9, 0.0, 0.0, true});
}

}  // namespace
}  // namespace gantry::gputest
