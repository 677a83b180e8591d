// A whole training step on cuda:0 against the CPU backend: the registry's DCGAN (batch norm in
// both networks, as configs/dcgan_fashion_mnist.json) built from one seed on each device, one
// global step (a D update, then a G update on the D update's fakes) on the same real batch, and
// then every parameter and batch-norm buffer of both networks, both losses and a prediction
// compared. The op parity tests check each kernel alone; this checks that the estimator, the
// optimizers and the kernels together give the CPU's step on a GPU (TF32 off, f32 math).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "core/ops/ops.h"
#include "gan/estimator/gan_estimator.h"
#include "gan/networks/network_registry.h"
#include "gan/objective/adversarial_term.h"
#include "gpu_test_support.h"
#include "losses/adversarial_loss.h"
#include "nn/adam.h"
#include "nn/sgd.h"

namespace gantry::gputest {
namespace {

struct StepOutcome {
  std::unique_ptr<gan::GanEstimator> estimator;
  gan::StepResults results;
};

class LastResults : public gan::Hook {
 public:
  void after_step(gan::GanEstimator&, const gan::StepResults& r) override { last = r; }
  gan::StepResults last;
};

// `adam`: Adam(2e-4, 0.5, 0.999) as the shipped config; otherwise plain SGD, whose update is
// proportional to the gradient, so a gradient that differs shows in the weights (Adam's first
// step is lr * sign(g) for most elements and would hide it).
gan::GanSpec dcgan_spec(bool adam) {
  gan::NetworkContext ctx;
  ctx.image_shape = {1, 32, 32};  // (C, H, W)
  ctx.noise_dim = 16;
  nlohmann::json g_config = {{"type", "dcgan"}, {"ngf", 8}};
  nlohmann::json d_config = {{"type", "dcgan"}, {"ndf", 8}};
  gan::BuiltNetwork g = gan::make_generator(g_config, "generator", ctx);
  gan::BuiltNetwork d = gan::make_discriminator(d_config, "discriminator", ctx);
  gan::GanSpec spec;
  spec.generator_fn = g.fn;
  spec.discriminator_fn = d.fn;
  spec.noise_shape = g.noise_shape;  // (16, 1, 1)
  spec.terms = gan::make_adversarial_terms(losses::make_non_saturating());
  gan::OptimizerFn optimizer = [adam](const std::vector<Tensor>& params) -> std::unique_ptr<nn::Optimizer> {
    if (adam) return std::make_unique<nn::Adam>(params, nn::AdamOptions{.lr = 2e-4, .beta1 = 0.5, .beta2 = 0.999});
    return std::make_unique<nn::Sgd>(params, nn::SgdOptions{.lr = 0.05});
  };
  spec.generator_optimizer = optimizer;
  spec.discriminator_optimizer = optimizer;
  spec.schedule = gan::TrainSchedule{.generator_steps = 1, .discriminator_steps = 1, .reuse_fake = true};
  return spec;
}

// A fixed real batch (N, 1, 32, 32) in [-1, 1], made on the CPU.
data::Batch real_batch(int64_t n) {
  data::Batch b;
  b.images = ops::tanh(ops::mul(ops::add(ops::rand({n, 1, 32, 32}, RngKey{11, 3}), -0.5f), 3.f)).detach();
  for (int64_t i = 0; i < n; ++i) {
    b.indices.push_back(i);
    b.epochs.push_back(0);
  }
  return b;
}

StepOutcome train_one_step(Device device, bool adam, int64_t steps = 1) {
  StepOutcome out;
  out.estimator = std::make_unique<gan::GanEstimator>(dcgan_spec(adam), distribute::make_one_device_strategy(device),
                                                      /*seed=*/5);
  const data::Batch real = real_batch(16);
  auto last = std::make_shared<LastResults>();
  out.estimator->train([&real] { return real; }, steps, {last});
  out.results = last->last;
  return out;
}

// Every f32 tensor of G's and D's state on the GPU against the CPU's, by name.
void expect_same_state(gan::GanEstimator& gpu, gan::GanEstimator& cpu, Tolerance tol) {
  for (int net = 0; net < 2; ++net) {
    nn::Module& g = net == 0 ? *gpu.replica(0).generator.module : *gpu.replica(0).discriminator.module;
    nn::Module& c = net == 0 ? *cpu.replica(0).generator.module : *cpu.replica(0).discriminator.module;
    auto gpu_state = g.state_dict();
    auto cpu_state = c.state_dict();
    ASSERT_EQ(gpu_state.size(), cpu_state.size());
    for (size_t i = 0; i < cpu_state.size(); ++i) {
      const std::string what = (net == 0 ? "generator." : "discriminator.") + cpu_state[i].first;
      ASSERT_EQ(gpu_state[i].first, cpu_state[i].first);
      EXPECT_TRUE(gpu_state[i].second.device().is_cuda()) << what;
      if (cpu_state[i].second.dtype() != DType::F32) continue;  // num_batches_tracked
      EXPECT_TRUE(all_close(gpu_state[i].second.to(Device::cpu()), cpu_state[i].second, tol, what));
    }
  }
}

class TrainingStepParity : public ::testing::Test {
 protected:
  void SetUp() override {
    GANTRY_REQUIRE_CUDA_DEVICES(1);
    cuda::set_allow_tf32(false);
  }
};

TEST_F(TrainingStepParity, InitialWeightsAreTheCpusBitForBit) {
  StepOutcome gpu = train_one_step(Device::cuda(0), /*adam=*/false, /*steps=*/0);
  StepOutcome cpu = train_one_step(Device::cpu(), /*adam=*/false, /*steps=*/0);
  expect_same_state(*gpu.estimator, *cpu.estimator, Tolerance{0, 0});
}

TEST_F(TrainingStepParity, OneSgdStepMatchesTheCpu) {
  StepOutcome gpu = train_one_step(Device::cuda(0), /*adam=*/false);
  StepOutcome cpu = train_one_step(Device::cpu(), /*adam=*/false);
  ASSERT_EQ(gpu.results.step, 1);
  EXPECT_NEAR(gpu.results.discriminator_loss, cpu.results.discriminator_loss,
              1e-5 + 1e-4 * std::abs(cpu.results.discriminator_loss));
  EXPECT_NEAR(gpu.results.generator_loss, cpu.results.generator_loss,
              1e-5 + 1e-4 * std::abs(cpu.results.generator_loss));
  expect_same_state(*gpu.estimator, *cpu.estimator, Tolerance{1e-5, 1e-4});
  // The trained G's samples: the same noise gives the same images.
  const Tensor noise = ops::randn({4, 16, 1, 1}, RngKey{9, 1});
  EXPECT_TRUE(all_close(gpu.estimator->predict(noise).to(Device::cpu()), cpu.estimator->predict(noise),
                        Tolerance{1e-5, 1e-4}, "predict"));
}

// The shipped optimiser over three steps: Adam's first steps are close to lr * sign(g), so the
// weights agree to a few ulps of the update unless a gradient's sign differs; the tolerance is a
// tenth of one update (2e-4).
TEST_F(TrainingStepParity, ThreeAdamStepsMatchTheCpu) {
  StepOutcome gpu = train_one_step(Device::cuda(0), /*adam=*/true, /*steps=*/3);
  StepOutcome cpu = train_one_step(Device::cpu(), /*adam=*/true, /*steps=*/3);
  ASSERT_EQ(gpu.results.step, 3);
  EXPECT_NEAR(gpu.results.discriminator_loss, cpu.results.discriminator_loss,
              1e-5 + 1e-4 * std::abs(cpu.results.discriminator_loss));
  expect_same_state(*gpu.estimator, *cpu.estimator, Tolerance{2e-5, 1e-4});
}

}  // namespace
}  // namespace gantry::gputest
