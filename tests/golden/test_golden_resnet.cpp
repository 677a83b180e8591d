// The "resnet" networks and conditional batch norm against PyTorch (bench/resnet_torch.py's
// modules; values from tests/golden/make_resnet_golden.py): one training-mode forward and
// backward of a small conditional generator (conditional batch norm) and of a spectrally
// normalised projection discriminator, and of both with per-resolution widths
// (channel_multipliers), with the torch state loaded by name; outputs, the input
// gradient, every parameter gradient and the updated buffers (running statistics, u and v).
//
// Tolerance as tests/golden/test_golden_net.cpp's kNet (float32 through several layers and long
// sums whose order depends on oneDNN's kernel and threads), with a larger absolute part for the
// generator's parameter gradients, which sum over 2 x 32 x 32 positions.
#include <gtest/gtest.h>

#include <cmath>

#include "core/ops/ops.h"
#include "gan/networks/network_registry.h"
#include "nn/conditional_batch_norm.h"
#include "nn/state_dict.h"
#include "support/golden.h"

namespace gantry {
namespace {

using testing::golden_close;
using testing::GoldenFile;
using testing::Tolerance;

constexpr Tolerance kNet{2e-6, 5e-4};
constexpr Tolerance kGrad{2e-5, 5e-4};

void load_from(nn::Module& m, const GoldenFile& f) {
  nn::NamedTensors given;
  for (const auto& [name, t] : m.state_dict())
    given.emplace_back(name, t.dtype() == DType::I64 ? f.index_tensor(name) : f.tensor(name));
  nn::load_state_dict(m, given, f.path());
}

// Backward of sum(out * cos(0.37 i)), then every parameter gradient and updated buffer (the
// module has some: batch norm or spectral norm).
void check_step(nn::Module& m, const Tensor& out, const GoldenFile& f, bool has_buffers) {
  EXPECT_TRUE(golden_close(out, f, "out", kNet));
  ops::sum(ops::mul(out, testing::golden_wave(out.shape(), 0.37, true))).backward();
  for (const auto& [name, p] : m.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_TRUE(golden_close(p.grad(), f, "grad_" + name, kGrad)) << name;
  }
  int buffers = 0;
  for (const auto& [name, b] : m.named_buffers())
    if (f.has("after_" + name)) {
      EXPECT_TRUE(golden_close(b.to(DType::F32), f, "after_" + name, kNet)) << name;
      ++buffers;
    }
  EXPECT_EQ(buffers > 0, has_buffers);
}

TEST(GoldenResNet, ConditionalBatchNorm) {
  GoldenFile f = GoldenFile::load("resnet_conditional_batch_norm");
  nn::ConditionalBatchNorm2d m(3, 4);
  load_from(m, f);
  m.train();
  Tensor x = f.tensor("x", true);
  Tensor out = m.forward(x, f.index_tensor("labels"));
  check_step(m, out, f, true);
  EXPECT_TRUE(golden_close(x.grad(), f, "grad_x", kNet));
}

// One training-mode step of the generator `cfg` (1 channel, 32x32) with the file's state, noise
// and, with classes, labels.
void check_generator(const std::string& file, nlohmann::json cfg, int64_t nz, int64_t classes) {
  GoldenFile f = GoldenFile::load(file);
  gan::NetworkContext ctx;
  ctx.image_shape = {1, 32, 32};
  ctx.num_classes = classes;
  ctx.noise_dim = nz;
  nn::ModulePtr g = gan::make_generator(cfg, "generator", ctx).fn(Device::cpu(), RngKey{1, 1});
  load_from(*g, f);
  g->train();
  Tensor z = f.tensor("z", true);
  Tensor out = classes > 0 ? g->forward(z, f.index_tensor("labels")) : g->forward(z);
  check_step(*g, out, f, true);
  EXPECT_TRUE(golden_close(z.grad(), f, "grad_z", kGrad));
}

// The same for the discriminator `cfg` on `batch` sin(0.91 i) images.
void check_discriminator(const std::string& file, nlohmann::json cfg, int64_t batch, int64_t classes,
                         bool has_buffers) {
  GoldenFile f = GoldenFile::load(file);
  gan::NetworkContext ctx;
  ctx.image_shape = {1, 32, 32};
  ctx.num_classes = classes;
  nn::ModulePtr d = gan::make_discriminator(cfg, "discriminator", ctx).fn(Device::cpu(), RngKey{1, 2});
  load_from(*d, f);
  d->train();
  Tensor x = testing::golden_wave(Shape{batch, 1, 32, 32}, 0.91, false);
  x.set_requires_grad(true);
  Tensor out = classes > 0 ? d->forward(x, f.index_tensor("labels")) : d->forward(x);
  check_step(*d, out, f, has_buffers);
  EXPECT_TRUE(golden_close(x.grad(), f, "grad_x", kNet));
}

TEST(GoldenResNet, ConditionalGenerator) {
  check_generator("resnet_generator", {{"type", "resnet"}, {"ch", 4}}, 8, 3);
}

TEST(GoldenResNet, ProjectionDiscriminatorWithSpectralNorm) {
  check_discriminator("resnet_discriminator", {{"type", "resnet"}, {"ch", 4}, {"spectral_norm", true}}, 2, 3, true);
}

// channel_multipliers: G narrows from 8 channels at 4x4 to 2 at 32x32, D widens from 2 to 8.
TEST(GoldenResNet, GeneratorWithChannelMultipliers) {
  check_generator("resnet_generator_widths", {{"type", "resnet"}, {"ch", 2}, {"channel_multipliers", {4, 2, 1, 1}}}, 2, 0);
}

TEST(GoldenResNet, DiscriminatorWithChannelMultipliers) {
  check_discriminator("resnet_discriminator_widths",
                      {{"type", "resnet"}, {"ch", 2}, {"channel_multipliers", {1, 2, 4}}, {"spectral_norm", false}}, 1, 0,
                      false);
}

}  // namespace
}  // namespace gantry
