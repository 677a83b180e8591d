// Fused optimizer kernels (backend/cuda/fused_optimizer.h) against the same functors run on the
// host, over a bucket of several thousand elements and several steps. Skipped without a device.
#include <gtest/gtest.h>

#include <cmath>
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
Tensor on_host(const std::vector<float>& v) {
  return ops::from_vector(v, Shape{static_cast<int64_t>(v.size())});
}

class FusedOptimizer : public ::testing::Test {
 protected:
  void SetUp() override { GANTRY_REQUIRE_CUDA_DEVICES(1); }
};

TEST_F(FusedOptimizer, AdamAndAmsgradMatchTheHostFunctor) {
  for (bool amsgrad : {false, true}) {
    for (bool decoupled : {false, true}) {
      std::vector<float> p = values(kN, 1), m(kN, 0.f), v(kN, 0.f), mx(kN, 0.f);
      Tensor dp = on_device(p), dm = on_device(m), dv = on_device(v), dmx = on_device(mx);
      for (int step = 1; step <= 3; ++step) {
        std::vector<float> g = values(kN, 10 + step);
        AdamMath math{};
        const double lr = 1e-3, b1 = 0.9, b2 = 0.999, wd = 0.01;
        math.beta1 = float(b1);
        math.beta2 = float(b2);
        math.one_minus_beta1 = float(1.0 - b1);
        math.one_minus_beta2 = float(1.0 - b2);
        math.step_size = float(lr / (1.0 - std::pow(b1, step)));
        math.bc2_sqrt = float(std::sqrt(1.0 - std::pow(b2, step)));
        math.eps = 1e-8f;
        math.weight_decay = decoupled ? 0.f : float(wd);
        math.decoupled = decoupled ? float(1.0 - lr * wd) : 1.f;
        math.amsgrad = amsgrad;
        for (int64_t i = 0; i < kN; ++i) math(p[i], g[i], m[i], v[i], mx[i]);
        Tensor dg = on_device(g);
        cuda::fused_adam(0, math, device_ptr(dp), device_ptr(dg), device_ptr(dm), device_ptr(dv),
                         amsgrad ? device_ptr(dmx) : nullptr, kN);
      }
      const std::string what = std::string("adam") + (amsgrad ? " amsgrad" : "") +
                               (decoupled ? " (adamw)" : "");
      EXPECT_TRUE(all_close(dp, on_host(p), kUpdate, what + " param"));
      EXPECT_TRUE(all_close(dm, on_host(m), kUpdate, what + " exp_avg"));
      EXPECT_TRUE(all_close(dv, on_host(v), kUpdate, what + " exp_avg_sq"));
      if (amsgrad) {
        EXPECT_TRUE(all_close(dmx, on_host(mx), kUpdate, what + " max_exp_avg_sq"));
      }
    }
  }
}

TEST_F(FusedOptimizer, RmsPropMatchesTheHostFunctor) {
  for (bool centered : {false, true}) {
    for (float momentum : {0.f, 0.9f}) {
      std::vector<float> p = values(kN, 2), sq(kN, 0.f), avg(kN, 0.f), buf(kN, 0.f);
      Tensor dp = on_device(p), dsq = on_device(sq), davg = on_device(avg), dbuf = on_device(buf);
      RmsPropMath math{0.01f, 0.99f, float(1.0 - 0.99), 1e-8f, 0.001f, momentum, centered};
      for (int step = 1; step <= 3; ++step) {
        std::vector<float> g = values(kN, 20 + step);
        for (int64_t i = 0; i < kN; ++i) math(p[i], g[i], sq[i], avg[i], buf[i]);
        Tensor dg = on_device(g);
        cuda::fused_rmsprop(0, math, device_ptr(dp), device_ptr(dg), device_ptr(dsq),
                            device_ptr(davg), device_ptr(dbuf), kN);
      }
      const std::string what = std::string("rmsprop") + (centered ? " centered" : "") +
                               (momentum > 0.f ? " momentum" : "");
      EXPECT_TRUE(all_close(dp, on_host(p), kUpdate, what + " param"));
      EXPECT_TRUE(all_close(dsq, on_host(sq), kUpdate, what + " square_avg"));
    }
  }
}

TEST_F(FusedOptimizer, SgdWithNesterovMomentumMatchesTheHostFunctor) {
  std::vector<float> p = values(kN, 3), buf(kN, 0.f);
  Tensor dp = on_device(p), dbuf = on_device(buf);
  for (int step = 1; step <= 3; ++step) {
    std::vector<float> g = values(kN, 30 + step);
    SgdMath math{0.1f, 0.9f, 1.f, 1e-4f, /*nesterov=*/true, /*first=*/step == 1};
    for (int64_t i = 0; i < kN; ++i) math(p[i], g[i], buf[i]);
    Tensor dg = on_device(g);
    cuda::fused_sgd(0, math, device_ptr(dp), device_ptr(dg), device_ptr(dbuf), kN);
  }
  EXPECT_TRUE(all_close(dp, on_host(p), kUpdate, "sgd param"));
  EXPECT_TRUE(all_close(dbuf, on_host(buf), kUpdate, "sgd momentum buffer"));
}

TEST_F(FusedOptimizer, RefusesMissingStateBeforeLaunching) {
  Tensor p = on_device(values(8, 4));
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
  Tensor cpu_param = ops::from_vector(values(kN, 3), Shape{kN});
  Tensor gpu_param = cpu_param.to(Device::cuda(0));
  cpu_param.set_requires_grad(true);
  gpu_param.set_requires_grad(true);
  Opt on_cpu({cpu_param}, o), on_gpu({gpu_param}, o);
  for (int step = 1; step <= 3; ++step) {
    Tensor g = ops::from_vector(values(kN, 20 + step), Shape{kN});
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
