// The "resnet" networks and conditional batch norm against PyTorch (bench/resnet_torch.py's
// modules; values from tests/golden/make_resnet_golden.py): one training-mode forward and
// backward of a small conditional generator (conditional batch norm) and of a spectrally
// normalised projection discriminator, with the torch state loaded by name; outputs, the input
// gradient, every parameter gradient and the updated buffers (running statistics, u and v).
//
// Tolerance as tests/golden/test_golden_net.cpp's kNet (float32 through several layers and long
// sums whose order depends on oneDNN's kernel and threads), with a larger absolute part for the
// generator's parameter gradients, which sum over 2 x 32 x 32 positions.
#include <gtest/gtest.h>

#include <cmath>

#include "core/ops/ops.h"
#include "gan/networks.h"
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

// cos(0.37 i) / sin(0.91 i) over the flattened index, in double rounded to float (as the script).
Tensor wave(const Shape& shape, double freq, bool cosine) {
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    const double a = freq * static_cast<double>(i);
    v[i] = static_cast<float>(cosine ? std::cos(a) : std::sin(a));
  }
  return ops::from_vector(v, shape);
}

void load_from(nn::Module& m, const GoldenFile& f) {
  nn::NamedTensors given;
  for (const auto& [name, t] : m.state_dict())
    given.emplace_back(name, t.dtype() == DType::I64 ? f.index_tensor(name) : f.tensor(name));
  nn::load_state_dict(m, given, f.path());
}

// Backward of sum(out * cos(0.37 i)), then every parameter gradient and updated buffer.
void check_step(nn::Module& m, const Tensor& out, const GoldenFile& f) {
  EXPECT_TRUE(golden_close(out, f, "out", kNet));
  ops::sum(ops::mul(out, wave(out.shape(), 0.37, true))).backward();
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
  EXPECT_GT(buffers, 0);
}

TEST(GoldenResNet, ConditionalBatchNorm) {
  GoldenFile f = GoldenFile::load("resnet_conditional_batch_norm");
  nn::ConditionalBatchNorm2d m(3, 4);
  load_from(m, f);
  m.train();
  Tensor x = f.tensor("x", true);
  Tensor out = m.forward(x, f.index_tensor("labels"));
  check_step(m, out, f);
  EXPECT_TRUE(golden_close(x.grad(), f, "grad_x", kNet));
}

TEST(GoldenResNet, ConditionalGenerator) {
  GoldenFile f = GoldenFile::load("resnet_generator");
  gan::NetworkContext ctx;
  ctx.image_shape = {1, 32, 32};
  ctx.num_classes = 3;
  ctx.noise_dim = 8;
  nlohmann::json cfg = {{"type", "resnet"}, {"ch", 4}};
  nn::ModulePtr g = gan::make_generator(cfg, "generator", ctx).fn(Device::cpu(), RngKey{1, 1});
  load_from(*g, f);
  g->train();
  Tensor z = f.tensor("z", true);
  Tensor out = g->forward(z, f.index_tensor("labels"));
  check_step(*g, out, f);
  EXPECT_TRUE(golden_close(z.grad(), f, "grad_z", kGrad));
}

TEST(GoldenResNet, ProjectionDiscriminatorWithSpectralNorm) {
  GoldenFile f = GoldenFile::load("resnet_discriminator");
  gan::NetworkContext ctx;
  ctx.image_shape = {1, 32, 32};
  ctx.num_classes = 3;
  nlohmann::json cfg = {{"type", "resnet"}, {"ch", 4}, {"spectral_norm", true}};
  nn::ModulePtr d = gan::make_discriminator(cfg, "discriminator", ctx).fn(Device::cpu(), RngKey{1, 2});
  load_from(*d, f);
  d->train();
  Tensor x = wave(Shape{2, 1, 32, 32}, 0.91, false);
  x.set_requires_grad(true);
  Tensor out = d->forward(x, f.index_tensor("labels"));
  check_step(*d, out, f);
  EXPECT_TRUE(golden_close(x.grad(), f, "grad_x", kNet));
}

}  // namespace
}  // namespace gantry
