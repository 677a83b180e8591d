// The "transformer" generator and discriminator (gan/networks/transformer.h): registration,
// shapes for pixels and latents of any channel count and non-square grids, conditional and ACGAN
// outputs, the output taps and multi-level supervision, w_avg and truncation (StyleGenerator), activation checkpointing
// giving bit-identical gradients, and config errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/autograd/engine.h"
#include "core/ops/ops.h"
#include "gan/networks/network_registry.h"
#include "gan/networks/style_generator.h"
#include "nn/state_dict.h"
#include "support/error_text.h"
#include "support/gradcheck.h"
#include "support/network_context.h"

namespace gantry::gan {
namespace {

using gantry::testing::error_of;
using gantry::testing::network_context;

nlohmann::json tiny(nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json c = {{"type", "transformer"}, {"width", 16}, {"depth", 2}, {"heads", 2}, {"patch", 4}};
  c.update(extra);
  return c;
}

nn::ModulePtr generator(nlohmann::json cfg, const NetworkContext& ctx, uint64_t seed = 1) {
  return make_generator(cfg, "generator", ctx).fn(Device::cpu(), RngKey{seed, 1});
}
nn::ModulePtr discriminator(nlohmann::json cfg, const NetworkContext& ctx, uint64_t seed = 2) {
  return make_discriminator(cfg, "discriminator", ctx).fn(Device::cpu(), RngKey{seed, 2});
}

TEST(TransformerNetworks, AreRegisteredByName) {
  EXPECT_EQ(std::ranges::count(generator_names(), "transformer"), 1);
  EXPECT_EQ(std::ranges::count(discriminator_names(), "transformer"), 1);
}

TEST(TransformerNetworks, ShapesForPixelsAndLatentsOfAnyChannelCount) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{1, 32, 32}, {3, 16, 24}, {4, 8, 8}}) {
    const NetworkContext ctx = network_context(shape);
    nn::ModulePtr g = generator(tiny(), ctx), d = discriminator(tiny(), ctx);
    Tensor images = g->forward(ops::randn({3, 16}, RngKey{3, 3}));
    EXPECT_EQ(images.shape(), Shape({3, shape[0], shape[1], shape[2]}));
    EXPECT_EQ(d->forward(images).shape(), Shape({3, 1}));
  }
}

TEST(TransformerNetworks, ConditionalAndAuxiliaryClassifierOutputs) {
  const NetworkContext ctx = network_context({1, 16, 16}, 5);
  nn::ModulePtr g = generator(tiny(), ctx), d = discriminator(tiny(), ctx);
  const Tensor labels = ops::from_vector(std::vector<int64_t>{0, 4}, Shape{2});
  Tensor images = g->forward(ops::randn({2, 16}, RngKey{4, 4}), labels);
  EXPECT_EQ(d->forward(images, labels).shape(), Shape({2, 1}));
  EXPECT_NE(error_of([&] { g->forward(ops::randn({2, 16}, RngKey{4, 4})); }).find("labels are required"),
            std::string::npos);
  NetworkContext acgan = ctx;
  acgan.auxiliary_classifier = true;
  EXPECT_EQ(discriminator(tiny(), acgan)->forward(images).shape(), Shape({2, 6}));
}

// With 4 outputs over 4 blocks every block feeds an output layer of its own and the image is their
// sum: with the first three output layers' maps zeroed, the 4-output network draws what a
// 1-output network with the same blocks and the last output layer draws; unzeroed, they add to it.
// `outputs` may not exceed the depth.
TEST(TransformerNetworks, OutputLayersAreSummedOverTheDepth) {
  const NetworkContext ctx = network_context({1, 8, 8});
  nlohmann::json one = tiny({{"depth", 4}}), four = tiny({{"depth", 4}, {"outputs", 4}});
  nn::ModulePtr g1 = generator(one, ctx), g4 = generator(four, ctx);
  EXPECT_EQ(g4->num_parameters() - g1->num_parameters(), 3 * (16 * 16 + 16 + 16 * 16 + 16));
  const Tensor z = ops::randn({2, 16}, RngKey{9, 9});
  const std::vector<float> all_levels = g4->forward(z).to_vector();
  nn::NamedTensors four_state = g4->state_dict(), one_state;
  for (auto& [name, t] : four_state) {
    if (name.starts_with("outputs.3.")) one_state.emplace_back("outputs.0." + name.substr(10), t);
    else if (!name.starts_with("outputs.")) one_state.emplace_back(name, t);
    if (name.starts_with("outputs.") && !name.starts_with("outputs.3.") && name.find(".linear.") != std::string::npos)
      t = ops::zeros(t.shape());
  }
  nn::load_state_dict(*g1, one_state, "the 4-output network");
  nn::load_state_dict(*g4, four_state, "the 4-output network, three levels zeroed");
  const std::vector<float> last_level = g4->forward(z).to_vector();
  EXPECT_EQ(last_level, g1->forward(z).to_vector());
  EXPECT_NE(last_level, all_levels);
  EXPECT_NE(error_of([&] { generator(tiny({{"outputs", 3}}), ctx); }).find("generator.outputs"), std::string::npos);
}

// Multi-level supervision (Note [multi-level supervision]): in training G returns the running sums
// after each output, earliest first, stacked on channels; in evaluation the image, which is the
// last of them. With the second output layer's map zeroed the first two levels are equal. The
// noise levels default to GAT's, and bad ones are refused naming the key.
TEST(TransformerNetworks, MultiLevelSupervisionStacksTheRunningSumsInTraining) {
  const NetworkContext ctx = network_context({2, 8, 8});
  const nlohmann::json cfg = tiny({{"depth", 4}, {"outputs", 4}, {"multi_level", true}});
  nlohmann::json copy = cfg;
  const std::vector<float> noise = make_generator(copy, "generator", ctx).level_noise;
  ASSERT_EQ(noise.size(), 4u);
  const std::vector<float> gat = {0.885f, 0.76f, 0.51f, 0.01f};
  for (size_t k = 0; k < 4; ++k) EXPECT_NEAR(noise[k], gat[k], 1e-6) << "level " << k;
  nn::ModulePtr g = generator(cfg, ctx);
  nn::NamedTensors state = g->state_dict();
  for (auto& [name, t] : state)
    if (name.starts_with("outputs.1.linear.")) t = ops::zeros(t.shape());
  nn::load_state_dict(*g, state, "the network, its second output zeroed");
  const Tensor z = ops::randn({3, 16}, RngKey{9, 9});
  const Tensor levels = g->forward(z);
  ASSERT_EQ(levels.shape(), Shape({3, 8, 8, 8}));
  auto level = [&](int64_t k) { return ops::slice(levels, 1, 2 * k, 2 * k + 2).to_vector(); };
  EXPECT_EQ(level(0), level(1));
  EXPECT_NE(level(1), level(2));
  g->eval();
  const Tensor image = g->forward(z);
  EXPECT_EQ(image.shape(), Shape({3, 2, 8, 8}));
  EXPECT_EQ(image.to_vector(), level(3));

  auto error = [&](nlohmann::json extra) { return error_of([&] { generator(tiny(extra), ctx); }); };
  EXPECT_NE(error({{"multi_level", true}}).find("generator.multi_level: expected at least 2 outputs"), std::string::npos);
  const std::string rising = error({{"outputs", 2}, {"multi_level", true}, {"level_noise", {0.2, 0.5}}});
  EXPECT_NE(rising.find("generator.level_noise: expected 2 numbers (one per output) in [0, 1), not increasing, found "
                        "[0.2,0.5]"),
            std::string::npos)
      << rising;
  EXPECT_NE(error({{"outputs", 2}, {"multi_level", true}, {"level_noise", {0.5}}}).find("generator.level_noise"),
            std::string::npos);
  EXPECT_NE(error({{"outputs", 2}, {"multi_level", true}, {"level_noise", {1.0, 0.5}}}).find("generator.level_noise"),
            std::string::npos);
  const std::string unused = error({{"outputs", 2}, {"level_noise", {0.5, 0.1}}});
  EXPECT_NE(unused.find("generator.level_noise"), std::string::npos) << unused;
}

TEST(TransformerNetworks, TracksWAverageAndTruncates) {
  const NetworkContext ctx = network_context({1, 8, 8});
  nn::ModulePtr g = generator(tiny(), ctx);
  auto* style = dynamic_cast<StyleGenerator*>(g.get());
  ASSERT_NE(style, nullptr);
  EXPECT_EQ(style->num_latents(), 3u);  // 2 blocks + 1 output layer
  style->set_track_w_avg(true);
  g->forward(ops::randn({5, 16}, RngKey{5, 5}));
  std::vector<float> sum;
  style->take_w_sum(sum);
  ASSERT_EQ(sum.size(), 17u);
  EXPECT_EQ(sum.back(), 5.f);
  style->update_w_avg(sum);
  // psi 0 in eval: every z gives the image of w_avg.
  g->eval();
  TruncationScope truncation(*g, 0.f, 0, "test");
  Tensor a = g->forward(ops::randn({1, 16}, RngKey{6, 6})), b = g->forward(ops::randn({1, 16}, RngKey{7, 7}));
  EXPECT_EQ(a.to_vector(), b.to_vector());
}

bool bit_identical(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data<float>(), b.data<float>(), a.numel() * sizeof(float)) == 0;
}

// G's and D's parameter gradients (and D's input gradient) with and without recomputing the blocks.
TEST(TransformerNetworks, ActivationCheckpointingGivesBitIdenticalGradients) {
  const NetworkContext ctx = network_context({1, 16, 16});
  auto gradients = [&](bool checkpointing) {
    nlohmann::json cfg = tiny({{"activation_checkpointing", checkpointing}});
    nn::ModulePtr g = generator(cfg, ctx), d = discriminator(cfg, ctx);
    Tensor images = g->forward(ops::randn({2, 16}, RngKey{8, 8}));
    Tensor loss = ops::sum(ops::softplus(d->forward(images)));
    std::vector<Tensor> wrt = g->parameters();
    for (const Tensor& p : d->parameters()) wrt.push_back(p);
    wrt.push_back(images);
    return autograd::grad({loss}, wrt);
  };
  const std::vector<Tensor> plain = gradients(false), recomputed = gradients(true);
  ASSERT_EQ(plain.size(), recomputed.size());
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_TRUE(bit_identical(plain[i], recomputed[i])) << "gradient " << i;
}

TEST(TransformerNetworks, ConfigErrorsNameTheKey) {
  const NetworkContext ctx = network_context({1, 30, 30});  // 30 is no multiple of the patch, 4
  const std::string patch = error_of([&] { generator(tiny(), ctx); });
  EXPECT_NE(patch.find("generator.patch"), std::string::npos) << patch;
  const NetworkContext square = network_context({1, 32, 32});
  const std::string width = error_of([&] { discriminator(tiny({{"width", 20}, {"heads", 2}}), square); });
  EXPECT_NE(width.find("discriminator.width"), std::string::npos) << width;
  EXPECT_NE(width.find("multiple of 4 x heads (8)"), std::string::npos) << width;
}

}  // namespace
}  // namespace gantry::gan
