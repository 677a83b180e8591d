// The "r3gan" generator and discriminator (gan/networks/r3gan.h): registration, output shapes at
// 32/64 px with 1 and 3 channels, parameter counts against the PyTorch twin
// (bench/r3gan_torch.py), the block's identity start (Note [r3gan initialisation]), the grouped
// convolution against a block-diagonal dense one, the resamplers on constant images, conditional
// paths and config errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/ops/ops.h"
#include "gan/networks/network_registry.h"
#include "gan/networks/r3gan.h"
#include "support/error_text.h"
#include "support/gradcheck.h"
#include "support/network_context.h"

namespace gantry::gan {
namespace {

using gantry::testing::network_context;

nlohmann::json small(int64_t stages) {
  return {{"type", "r3gan"},
          {"widths", std::vector<int64_t>(stages, 32)},
          {"blocks_per_stage", std::vector<int64_t>(stages, 1)}};
}

using gantry::testing::error_of;

TEST(R3GANNetworks, AreRegisteredByName) {
  EXPECT_EQ(std::ranges::count(generator_names(), "r3gan"), 1);
  EXPECT_EQ(std::ranges::count(discriminator_names(), "r3gan"), 1);
}

// Counts printed by `/usr/bin/python3 bench/r3gan_torch.py --count --ngf 32 --ndf 32 --nz 16
// --blocks 1 --size S --nc C` (Debian's torch 1.13; group size 16, so cardinality 4): the twin's
// G and D, built with torch's grouped conv2d, have exactly these many parameters.
TEST(R3GANNetworks, ShapesAndParameterCountsMatchThePyTorchTwin) {
  struct Case {
    int64_t size, channels, g_params, d_params;
  };
  for (const Case& c :
       {Case{32, 1, 54816, 54336}, Case{32, 3, 54880, 54400}, Case{64, 1, 68256, 67776}, Case{64, 3, 68320, 67840}}) {
    NetworkContext ctx = network_context({c.channels, c.size, c.size});
    const int64_t stages = c.size == 32 ? 4 : 5;
    nlohmann::json g_cfg = small(stages), d_cfg = small(stages);
    BuiltNetwork g = make_generator(g_cfg, "generator", ctx);
    EXPECT_EQ(g.noise_shape, Shape({16}));
    nn::ModulePtr gen = g.fn(Device::cpu(), RngKey{1, 1});
    nn::ModulePtr disc = make_discriminator(d_cfg, "discriminator", ctx).fn(Device::cpu(), RngKey{1, 2});
    EXPECT_EQ(gen->num_parameters(), c.g_params) << c.size << " px, " << c.channels << " channels";
    EXPECT_EQ(disc->num_parameters(), c.d_params) << c.size << " px, " << c.channels << " channels";
    // defaults written back
    EXPECT_EQ(g_cfg["expansion"], 2);
    EXPECT_EQ(g_cfg["cardinality"], nlohmann::json(std::vector<int64_t>(stages, 4)));
    Tensor images = gen->forward(ops::randn({2, 16}, RngKey{3, 3}));
    EXPECT_EQ(images.shape(), Shape({2, c.channels, c.size, c.size}));
    Tensor logits = disc->forward(images);
    EXPECT_EQ(logits.shape(), Shape({2, 1}));
    EXPECT_TRUE(std::isfinite(ops::sum(logits).item()));
  }
}

TEST(R3GANNetworks, WidthChangesGetTransitionsAndConditionalPathsTakeLabels) {
  NetworkContext ctx = network_context({3, 32, 32}, 10);
  nlohmann::json g_cfg = {{"type", "r3gan"}, {"widths", {64, 32, 32, 16}}, {"blocks_per_stage", {1, 1, 1, 1}}};
  nlohmann::json d_cfg = {{"type", "r3gan"}, {"widths", {16, 32, 32, 64}}, {"blocks_per_stage", {1, 1, 1, 1}}};
  nn::ModulePtr g = make_generator(g_cfg, "generator", ctx).fn(Device::cpu(), RngKey{1, 1});
  nn::ModulePtr d = make_discriminator(d_cfg, "discriminator", ctx).fn(Device::cpu(), RngKey{1, 2});
  auto shape = [](const nn::ModulePtr& m, const std::string& name) {
    for (auto& [n, t] : m->state_dict())
      if (n == name) return t.shape();
    return Shape{};
  };
  EXPECT_EQ(shape(g, "embed"), Shape({10, 16}));  // embed_dim defaults to noise_dim
  EXPECT_EQ(shape(g, "basis_linear"), Shape({64, 32}));
  EXPECT_EQ(shape(g, "stages.1.transition"), Shape({32, 64, 1, 1}));
  EXPECT_EQ(shape(g, "stages.2.transition"), Shape{});                        // same width: none
  EXPECT_EQ(shape(g, "stages.3.blocks.0.conv2"), Shape({32, 32 / 2, 3, 3}));  // cardinality 2
  EXPECT_EQ(shape(d, "stages.0.transition"), Shape({32, 16, 1, 1}));
  EXPECT_EQ(shape(d, "embed"), Shape({10, 64}));  // embed_dim defaults to the 4x4 width
  EXPECT_EQ(shape(d, "basis_linear"), Shape({64, 64}));
  Tensor labels = ops::from_vector(std::vector<int64_t>{3, 7}, Shape{2});
  Tensor images = g->forward(ops::randn({2, 16}, RngKey{3, 5}), labels);
  EXPECT_EQ(images.shape(), Shape({2, 3, 32, 32}));
  EXPECT_EQ(d->forward(images, labels).shape(), Shape({2, 1}));
  EXPECT_NE(error_of([&] { d->forward(images); }).find("labels are required"), std::string::npos);
}

// conv3 starts at zero: every block is the identity at initialisation.
TEST(R3GANNetworks, BlocksStartAsTheIdentity) {
  nn::ModulePtr block = r3gan::make_block(8, 2, 4, 0.5, RngKey{4, 4});
  Tensor x = ops::randn({2, 8, 5, 5}, RngKey{5, 5});
  std::vector<float> y = block->forward(x).to_vector(), want = x.to_vector();
  ASSERT_EQ(y.size(), want.size());
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], want[i]) << i;
}

// The [1,3,3,1] interpolation keeps a constant image constant away from the border (the filter
// sums to 1; up-sampling's gain 4 makes up for the inserted zeros).
TEST(R3GANNetworks, ResamplersInterpolate) {
  Tensor x = ops::full({1, 2, 8, 8}, 0.5);
  Tensor up = r3gan::upsample2x(x), down = r3gan::downsample2x(x);
  EXPECT_EQ(up.shape(), Shape({1, 2, 16, 16}));
  EXPECT_EQ(down.shape(), Shape({1, 2, 4, 4}));
  EXPECT_NEAR(ops::slice(ops::slice(up, 2, 2, 14), 3, 2, 14).to_vector()[37], 0.5f, 1e-6f);
  EXPECT_NEAR(ops::slice(ops::slice(down, 2, 1, 3), 3, 1, 3).to_vector()[5], 0.5f, 1e-6f);
}

TEST(R3GANNetworks, ConfigErrorsNameTheKeyPath) {
  auto gen_error = [](nlohmann::json cfg, const NetworkContext& ctx) {
    return error_of([&] { make_generator(cfg, "generator", ctx); });
  };
  std::string e = gen_error({{"type", "r3gan"}}, network_context({1, 28, 28}));
  EXPECT_NE(e.find("generator: r3gan supports square 32 or 64 pixel images, found 28 x 28"), std::string::npos) << e;
  e = gen_error({{"type", "r3gan"}, {"widths", {8, 8, 8}}}, network_context({1, 32, 32}));
  EXPECT_NE(e.find("generator.widths: expected 4 positive integers (per stage, 4x4 first)"), std::string::npos) << e;
  e = gen_error({{"type", "r3gan"}, {"widths", {8, 8, 8, 8}}, {"cardinality", {3, 1, 1, 1}}},
      network_context({1, 32, 32}));
  EXPECT_NE(e.find("generator.cardinality[0]: expected a divisor of the expanded width 16"), std::string::npos) << e;
  e = error_of([&] {
    nlohmann::json cfg = {{"type", "r3gan"}, {"expansion", 0}};
    make_discriminator(cfg, "discriminator", network_context({1, 32, 32}));
  });
  EXPECT_NE(e.find("discriminator.expansion"), std::string::npos) << e;
  e = gen_error({{"type", "r3gan"}, {"conditional", true}}, network_context({1, 32, 32}));
  EXPECT_NE(e.find("generator.conditional: the data has no classes"), std::string::npos) << e;
}

}  // namespace
}  // namespace gantry::gan
