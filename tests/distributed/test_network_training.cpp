// The registered conditional networks on replicas: two replicas over the same global batch equal
// one device, tightly (DESIGN.md: the trajectories agree up to float summation order), and the
// replicas hold bit-identical state. "resnet": class-conditional batch norm (here synchronized)
// and a projection discriminator with spectral norm, hinge loss. "r3gan": normalisation-free
// bottleneck blocks with grouped convolutions, class embeddings, the RpGAN loss. "transformer":
// attention with rotary embeddings, modulated blocks, a projection on the class token, and GAT's
// multi-level supervision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "core/ops/ops.h"
#include "distribute/strategy.h"
#include "gan/estimator/gan_estimator.h"
#include "gan/networks/network_registry.h"
#include "gan/objective/adversarial_term.h"
#include "losses/adversarial_loss.h"
#include "nn/adam.h"
#include "support/tiny_gan.h"

namespace gantry::gan {
namespace {

constexpr int64_t kClasses = 3;

// G and D as the configs name them, on conditional 32x32 images; Adam(1e-3, 0, beta2).
GanSpec network_spec(nlohmann::json g_cfg, nlohmann::json d_cfg,
                     std::shared_ptr<losses::AdversarialLoss> loss, double beta2, bool sync_batch_norm) {
  NetworkContext ctx;
  ctx.image_shape = {1, 32, 32};
  ctx.num_classes = kClasses;
  ctx.noise_dim = 8;
  BuiltNetwork g = make_generator(g_cfg, "generator", ctx);
  GanSpec spec;
  spec.generator_fn = g.fn;
  spec.noise_shape = g.noise_shape;
  spec.level_noise = g.level_noise;  // D sees the levels on channels (Note [multi-level supervision])
  ctx.image_shape[0] *= static_cast<int64_t>(std::max<size_t>(1, g.level_noise.size()));
  spec.discriminator_fn = make_discriminator(d_cfg, "discriminator", ctx).fn;
  spec.num_classes = kClasses;
  spec.terms = gan::make_adversarial_terms(std::move(loss));
  OptimizerFn adam = [beta2](const std::vector<Tensor>& p) -> std::unique_ptr<nn::Optimizer> {
    return std::make_unique<nn::Adam>(p, nn::AdamOptions{.lr = 1e-3, .beta1 = 0.0, .beta2 = beta2});
  };
  spec.generator_optimizer = adam;
  spec.discriminator_optimizer = adam;
  spec.sync_batch_norm = sync_batch_norm;
  return spec;
}

GanSpec resnet_spec() {
  return network_spec({{"type", "resnet"}, {"ch", 4}}, {{"type", "resnet"}, {"ch", 4}}, losses::make_hinge(), 0.9,
                      true);
}

GanSpec r3gan_spec() {
  return network_spec({{"type", "r3gan"}, {"widths", {16, 16, 8, 8}}, {"blocks_per_stage", {1, 1, 1, 1}}},
                      {{"type", "r3gan"}, {"widths", {8, 8, 16, 16}}, {"blocks_per_stage", {1, 1, 1, 1}}},
                      losses::make_relativistic_pairing(), 0.99, false);
}

GanSpec transformer_spec(bool multi_level = false) {
  const nlohmann::json net = {{"type", "transformer"}, {"width", 16}, {"depth", 2}, {"heads", 2}, {"patch", 8}};
  nlohmann::json g = net;
  g["outputs"] = 2;
  g["multi_level"] = multi_level;
  return network_spec(g, net, losses::make_relativistic_pairing(), 0.99, false);
}

// Batch k: smooth images in [-1, 1] and labels k + i mod classes.
BatchSource labelled_images(int64_t batch) {
  return [batch, k = int64_t{0}]() mutable {
    data::Batch b;
    b.images = ops::tanh(ops::randn({batch, 1, 32, 32}, RngKey{11, static_cast<uint64_t>(k)}));
    std::vector<int64_t> labels;
    for (int64_t i = 0; i < batch; ++i) labels.push_back((k + i) % kClasses);
    b.labels = ops::from_vector(labels, Shape{batch});
    ++k;
    return b;
  };
}

using testing::flat_state;

struct Trained {
  std::vector<float> generator, discriminator;
};

Trained train(const GanSpec& spec, int replicas, int64_t steps) {
  std::vector<Device> devices;
  for (int i = 0; i < replicas; ++i) devices.push_back(Device::cpu(i));
  GanEstimator est(spec, distribute::make_mirrored_strategy(devices), 5);
  est.train(labelled_images(8), steps);
  Trained t{flat_state(*est.replica(0).generator.module), flat_state(*est.replica(0).discriminator.module)};
  for (int r = 1; r < replicas; ++r) {
    EXPECT_EQ(flat_state(*est.replica(r).generator.module), t.generator) << "replica " << r;
    EXPECT_EQ(flat_state(*est.replica(r).discriminator.module), t.discriminator) << "replica " << r;
  }
  return t;
}

// Trains `spec` `steps` steps on 1 and 2 replicas: equal, and moved from the initial state.
void expect_two_replicas_equal_one(const GanSpec& spec, int64_t steps, const char* name, double tolerance = 1e-5) {
  Trained one = train(spec, 1, steps), two = train(spec, 2, steps);
  ASSERT_EQ(one.generator.size(), two.generator.size());
  const double g = testing::max_relative_difference(two.generator, one.generator);
  const double d = testing::max_relative_difference(two.discriminator, one.discriminator);
  // An Adam step moves weights by up to lr = 1e-3; a missing all-reduce, per-replica statistics
  // or a pairing of the wrong examples move them by that much, summation order by ~1e-6 of it.
  EXPECT_LT(g, tolerance);
  EXPECT_LT(d, tolerance);
  std::printf("[ measured ] %s, 2 replicas vs 1 after %lld step(s): max relative difference G %.3g D %.3g\n", name,
              static_cast<long long>(steps), g, d);
  Trained start = train(spec, 1, 0);
  EXPECT_GT(testing::max_relative_difference(one.generator, start.generator), 1e-4);
  EXPECT_GT(testing::max_relative_difference(one.discriminator, start.discriminator), 1e-4);
}

TEST(ResNetTraining, TwoReplicasWithSyncBatchNormEqualOneDeviceAfterAStep) {
  expect_two_replicas_equal_one(resnet_spec(), 1, "resnet");
}

TEST(R3GANTraining, TwoReplicasEqualOneDeviceAfterAStep) { expect_two_replicas_equal_one(r3gan_spec(), 1, "r3gan"); }

// The transformer's worst parameters are the blocks' modulation weights (measured 5.5e-5 with
// glibc's expf, 2.1e-4 with Note [vectorisable exp]'s; all others below 1e-5): their first
// gradients are products of small factors (GAT's gain-0.1 modulation), so summation order changes
// them relatively more, and Adam's first step, g / (|g| + eps), passes that on where |g| is near
// eps. A real error moves them by a whole step (1e-3, ~0.1 relative here), 100 times the bound.
TEST(TransformerTraining, TwoReplicasEqualOneDeviceAfterAStep) {
  expect_two_replicas_equal_one(transformer_spec(), 1, "transformer", 1e-3);
}

// Multi-level supervision: each replica noises its shard's levels at the examples' global indices,
// so the two replicas' D sees what one device's does.
TEST(TransformerTraining, MultiLevelSupervisionOnTwoReplicasEqualsOneDeviceAfterAStep) {
  expect_two_replicas_equal_one(transformer_spec(true), 1, "transformer, multi-level", 1e-3);
}

}  // namespace
}  // namespace gantry::gan
