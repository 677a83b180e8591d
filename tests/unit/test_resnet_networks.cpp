// The "resnet" generator and discriminator (gan/networks/resnet.h) and conditional batch norm:
// output shapes at 32/64/128 px, parameter counts against the PyTorch reference
// (bench/resnet_torch.py, counted by tests/golden/make_resnet_golden.py), the class paths, the
// config errors, and hinge as the default loss of resnet configs.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/ops/in_place.h"
#include "core/ops/ops.h"
#include "gan/config/run_config.h"
#include "gan/networks/network_registry.h"
#include "gan/networks/resnet.h"
#include "nn/conditional_batch_norm.h"
#include "support/error_text.h"
#include "support/golden.h"
#include "support/gradcheck.h"
#include "support/network_context.h"

namespace gantry::gan {
namespace {

using gantry::testing::network_context;

nn::ModulePtr build_generator(nlohmann::json cfg, const NetworkContext& ctx) {
  return make_generator(cfg, "generator", ctx).fn(Device::cpu(), RngKey{7, 1});
}
nn::ModulePtr build_discriminator(nlohmann::json cfg, const NetworkContext& ctx) {
  return make_discriminator(cfg, "discriminator", ctx).fn(Device::cpu(), RngKey{7, 2});
}

using gantry::testing::error_of;

// `got` equals `want` in value (1e-5) and in the gradients of a weighted sum with respect to
// every leaf (1e-4).
void expect_same_function(const Tensor& got, const Tensor& want, const std::vector<Tensor>& leaves) {
  const std::vector<Tensor> got_grads = autograd::grad({testing::weighted_sum(got)}, leaves);
  const std::vector<Tensor> want_grads = autograd::grad({testing::weighted_sum(want)}, leaves);
  ASSERT_EQ(got.shape(), want.shape());
  for (size_t k = 0; k <= leaves.size(); ++k) {
    const std::vector<float> u = (k == 0 ? got : got_grads[k - 1]).to_vector();
    const std::vector<float> v = (k == 0 ? want : want_grads[k - 1]).to_vector();
    const std::string what = k == 0 ? "value" : "gradient of leaf " + std::to_string(k - 1);
    const float tol = k == 0 ? 1e-5f : 1e-4f;
    ASSERT_EQ(u.size(), v.size()) << what;
    for (size_t i = 0; i < u.size(); ++i) ASSERT_NEAR(u[i], v[i], tol) << what << " at " << i;
  }
}

// The generator's transposed convolution equals nearest 2x up-sampling then the 3x3 convolution
// (odd and even sizes, channels not a multiple of the channel block; Note [up-sampling convolution]
// in gan/networks/resnet.h).
TEST(ResNetNetworks, UpsampleConvIsOneTransposedConvolution) {
  const std::vector<Tensor> leaves = {testing::random_input({2, 3, 5, 4}, 1),
                                      testing::random_input({6, 3, 3, 3}, 2)};
  const Tensor &x = leaves[0], &w = leaves[1];
  expect_same_function(
      ops::conv_transpose2d(x, upsample_conv3x3_weight(w), {}, ops::Conv2dOptions::make(2, 1)),
      ops::conv2d(ops::upsample_nearest2d(x, 2), w, {}, ops::Conv2dOptions::make(1, 1)), leaves);
}

// The discriminator's folded convolution equals the 3x3 convolution then 2x2 average pooling
// (Note [down-sampling convolution] in gan/networks/resnet.h).
TEST(ResNetNetworks, ConvAvgPoolIsOneStridedConvolution) {
  const std::vector<Tensor> leaves = {testing::random_input({2, 3, 6, 4}, 3),
                                      testing::random_input({5, 3, 3, 3}, 4)};
  const Tensor &x = leaves[0], &w = leaves[1];
  expect_same_function(
      ops::conv2d(x, conv3x3_avgpool_weight(w), {}, ops::Conv2dOptions::make(2, 1)),
      ops::avg_pool2d(ops::conv2d(x, w, {}, ops::Conv2dOptions::make(1, 1)), 2, 2), leaves);
}

TEST(ResNetNetworks, AreRegisteredByName) {
  auto has = [](const std::vector<std::string>& names) {
    return std::find(names.begin(), names.end(), "resnet") != names.end();
  };
  EXPECT_TRUE(has(generator_names()));
  EXPECT_TRUE(has(discriminator_names()));
}

TEST(ResNetNetworks, ShapesAtEveryResolution) {
  for (int64_t size : {32, 64, 128}) {
    NetworkContext ctx = network_context({3, size, size});
    nlohmann::json g_cfg = {{"type", "resnet"}, {"ch", 8}};
    BuiltNetwork g = make_generator(g_cfg, "generator", ctx);
    EXPECT_EQ(g.noise_shape, Shape({16}));
    nn::ModulePtr gen = g.fn(Device::cpu(), RngKey{1, 1});
    nn::ModulePtr disc = build_discriminator({{"type", "resnet"}, {"ch", 8}}, ctx);
    // up-blocks: 4 -> size
    EXPECT_EQ(gen->child("blocks")->num_children(), static_cast<size_t>(std::log2(size) - 2)) << size;
    Tensor images = gen->forward(ops::randn({2, 16}, RngKey{3, 3}));
    EXPECT_EQ(images.shape(), Shape({2, 3, size, size}));
    Tensor logits = disc->forward(images);
    EXPECT_EQ(logits.shape(), Shape({2, 1}));
    // tanh output
    EXPECT_LE(ops::amax(ops::abs(images)).item(), 1.f);
  }
}

// BigGAN-style widths: ch * channel_multipliers per resolution, in G from 4x4 up and in D from
// the first block down; every layer between two widths takes the right shapes.
TEST(ResNetNetworks, ChannelMultipliersSetTheWidthAtEachResolution) {
  NetworkContext ctx = network_context({1, 32, 32}, 0, 16);
  nn::ModulePtr g = build_generator({{"type", "resnet"}, {"ch", 4}, {"channel_multipliers", {8, 4, 2, 1}}}, ctx);
  nn::ModulePtr d = build_discriminator({{"type", "resnet"}, {"ch", 4}, {"channel_multipliers", {2, 4, 8}}}, ctx);
  auto shape = [](const nn::ModulePtr& m, const std::string& name) {
    for (auto& [n, t] : m->state_dict())
      if (n == name) return t.shape();
    return Shape{};
  };
  EXPECT_EQ(shape(g, "linear.weight"), Shape({4 * 4 * 32, 16}));
  EXPECT_EQ(shape(g, "blocks.0.conv1.weight"), Shape({16, 32, 3, 3}));
  EXPECT_EQ(shape(g, "blocks.2.shortcut.weight"), Shape({4, 8, 1, 1}));
  EXPECT_EQ(shape(g, "conv_out.weight"), Shape({1, 4, 3, 3}));
  EXPECT_EQ(shape(d, "blocks.0.conv1.weight_orig"), Shape({8, 1, 3, 3}));
  EXPECT_EQ(shape(d, "blocks.2.conv2.weight_orig"), Shape({32, 32, 3, 3}));
  EXPECT_EQ(shape(d, "linear.weight_orig"), Shape({1, 32}));
  Tensor images = g->forward(ops::randn({2, 16}, RngKey{3, 4}));
  EXPECT_EQ(images.shape(), Shape({2, 1, 32, 32}));
  EXPECT_EQ(d->forward(images).shape(), Shape({2, 1}));
  // All ones is the default: the same parameters as without the key.
  nn::ModulePtr flat = build_generator({{"type", "resnet"}, {"ch", 4}, {"channel_multipliers", {1, 1, 1, 1}}}, ctx);
  EXPECT_EQ(flat->num_parameters(), build_generator({{"type", "resnet"}, {"ch", 4}}, ctx)->num_parameters());
}

TEST(ResNetNetworks, ParameterCountsMatchThePyTorchReference) {
  testing::GoldenFile counts = testing::GoldenFile::load("resnet_parameter_counts");
  for (int64_t ch : {32, 64, 128})
    for (int64_t classes : {0, 10}) {
      NetworkContext ctx = network_context({1, 32, 32}, classes, 128);
      const std::string suffix = "_ch" + std::to_string(ch) + "_classes" + std::to_string(classes);
      nn::ModulePtr g = build_generator({{"type", "resnet"}, {"ch", ch}}, ctx);
      nn::ModulePtr d = build_discriminator({{"type", "resnet"}, {"ch", ch}}, ctx);
      EXPECT_EQ(static_cast<float>(g->num_parameters()), counts.get("generator" + suffix).values[0]) << suffix;
      EXPECT_EQ(static_cast<float>(d->num_parameters()), counts.get("discriminator" + suffix).values[0]) << suffix;
    }
}

TEST(ResNetNetworks, StateNamesFollowPyTorch) {
  NetworkContext ctx = network_context({1, 32, 32}, 10);
  nn::ModulePtr g = build_generator({{"type", "resnet"}, {"ch", 8}}, ctx);
  nn::ModulePtr d = build_discriminator({{"type", "resnet"}, {"ch", 8}}, ctx);
  std::vector<std::string> g_names, d_names;
  for (auto& [n, t] : g->state_dict()) g_names.push_back(n);
  for (auto& [n, t] : d->state_dict()) d_names.push_back(n);
  EXPECT_EQ(g_names.front(), "linear.weight");
  EXPECT_NE(std::find(g_names.begin(), g_names.end(), "blocks.0.bn1.gain"), g_names.end());
  EXPECT_NE(std::find(g_names.begin(), g_names.end(), "blocks.2.bn2.bn.running_var"), g_names.end());
  EXPECT_EQ(g_names.back(), "conv_out.bias");
  EXPECT_NE(std::find(d_names.begin(), d_names.end(), "blocks.0.conv1.weight_orig"), d_names.end());
  EXPECT_NE(std::find(d_names.begin(), d_names.end(), "embed.weight_u"), d_names.end());
}

TEST(ResNetNetworks, ClassesChangeTheConditionalGeneratorAndTheProjection) {
  NetworkContext ctx = network_context({1, 32, 32}, 4);
  nn::ModulePtr g = build_generator({{"type", "resnet"}, {"ch", 8}}, ctx);
  nn::ModulePtr d = build_discriminator({{"type", "resnet"}, {"ch", 8}}, ctx);
  NoGradGuard no_grad;
  Tensor z = ops::randn({2, 16}, RngKey{5, 5});
  z = ops::concat({ops::slice(z, 0, 0, 1), ops::slice(z, 0, 0, 1)}, 0);  // the same noise twice
  Tensor labels = ops::from_vector(std::vector<int64_t>{0, 3}, Shape{2});
  // Fresh tables: (1 + 0) x̂ + 0 is plain batch norm, so both labels draw the same image.
  Tensor same = g->forward(z, labels);
  EXPECT_EQ(ops::amax(ops::abs(ops::slice(same, 0, 0, 1) - ops::slice(same, 0, 1, 2))).item(), 0.f);
  for (auto& [name, p] : g->named_parameters())
    if (name.ends_with(".gain"))  // a different gain per class
      ops::copy_(p, ops::reshape(ops::mul(ops::arange(0, static_cast<double>(p.numel())), 0.1f), p.shape()));
  Tensor differ = g->forward(z, labels);
  EXPECT_GT(ops::amax(ops::abs(ops::slice(differ, 0, 0, 1) - ops::slice(differ, 0, 1, 2))).item(), 1e-3f);
  // The projection adds <embed(y), h>: the same image scores differently per class.
  Tensor x = ops::concat({ops::slice(same, 0, 0, 1), ops::slice(same, 0, 0, 1)}, 0);
  Tensor scores = d->forward(x, labels);  // (2, 1)
  EXPECT_GT(std::abs((ops::slice(scores, 0, 0, 1) - ops::slice(scores, 0, 1, 2)).item()), 1e-6f);
}

TEST(ResNetNetworks, ConditionalBatchNormNeedsLabelsAndStartsAsBatchNorm) {
  nn::ConditionalBatchNorm2d cbn(3, 5);
  EXPECT_EQ(cbn.get("gain").shape(), Shape({5, 3}));
  EXPECT_EQ(ops::amax(ops::abs(cbn.get("gain"))).item(), 0.f);
  Tensor x = ops::randn({4, 3, 2, 2}, RngKey{1, 2});
  EXPECT_NE(error_of([&] { cbn.forward(x); }).find("labels are required"), std::string::npos);
  EXPECT_NE(error_of([&] { cbn.forward(x, ops::zeros({4})); }).find("i64 labels"), std::string::npos);
  EXPECT_NE(error_of([&] { cbn.forward(ops::randn({4, 2, 2, 2}, RngKey{1, 3}), ops::zeros({4}, Device::cpu(), DType::I64)); })
                .find("expected input (N, 3, H, W)"),
            std::string::npos);
}

TEST(ResNetNetworks, ConfigErrorsNameTheKey) {
  auto gen_error = [](nlohmann::json cfg, NetworkContext ctx) {
    return error_of([&] { make_generator(cfg, "generator", ctx); });
  };
  auto disc_error = [](nlohmann::json cfg, NetworkContext ctx) {
    return error_of([&] { make_discriminator(cfg, "discriminator", ctx); });
  };
  const std::string size = gen_error({{"type", "resnet"}}, network_context({1, 28, 28}));
  EXPECT_NE(size.find("generator: resnet supports square 32, 64 or 128 pixel images, found 28 x 28"), std::string::npos) << size;
  EXPECT_NE(size.find("\"pad\": 2"), std::string::npos) << size;
  EXPECT_NE(disc_error({{"type", "resnet"}}, network_context({1, 32, 16})).find("found 32 x 16"), std::string::npos);
  EXPECT_NE(gen_error({{"type", "resnet"}, {"ch", 0}}, network_context({1, 32,
      32})).find("generator.ch: expected a positive integer"),
            std::string::npos);
  EXPECT_NE(gen_error({{"type", "resnet"}, {"chh", 8}}, network_context({1, 32, 32})).find("generator.chh"),
      std::string::npos);
  // 32 px: 4 generator widths (4, 8, 16, 32 px), 3 discriminator widths (16, 8, 4 px)
  const std::string count = gen_error({{"type", "resnet"}, {"channel_multipliers", {4, 2, 1}}},
      network_context({1, 32, 32}));
  EXPECT_NE(count.find("generator.channel_multipliers: expected 4 positive integers (4x4 first, then each up-block's "
                       "output), found [4,2,1]"), std::string::npos) << count;
  EXPECT_NE(disc_error({{"type", "resnet"}, {"channel_multipliers", {1, 0, 2}}}, network_context({1, 32, 32}))
                .find("discriminator.channel_multipliers: expected 3 positive integers"),
            std::string::npos);
  EXPECT_NE(disc_error({{"type", "resnet"}, {"channel_multipliers", "wide"}}, network_context({1, 32, 32}))
                .find("discriminator.channel_multipliers: expected a non-empty list of integers"),
            std::string::npos);
  EXPECT_NE(disc_error({{"type", "resnet"}, {"spectral_norm", "yes"}}, network_context({1, 32,
      32})).find("discriminator.spectral_norm"),
            std::string::npos);
  EXPECT_NE(disc_error({{"type", "resnet"}, {"conditional", true}}, network_context({1, 32,
      32})).find("discriminator.conditional: the data has no classes"),
            std::string::npos);
}

TEST(ResNetNetworks, UnconditionalNetworksIgnoreLabels) {
  NetworkContext ctx = network_context({1, 32, 32}, 3);
  nn::ModulePtr g = build_generator({{"type", "resnet"}, {"ch", 4}, {"conditional", false}}, ctx);
  nn::ModulePtr d = build_discriminator({{"type", "resnet"}, {"ch", 4}, {"conditional", false}}, ctx);
  EXPECT_EQ(d->named_children().size(), 2u);  // blocks, linear: no projection embedding
  NoGradGuard no_grad;
  Tensor z = ops::randn({2, 16}, RngKey{2, 2});
  Tensor labels = ops::from_vector(std::vector<int64_t>{0, 2}, Shape{2});
  Tensor a = g->forward(z, labels), b = g->forward(z);
  EXPECT_EQ(ops::amax(ops::abs(a - b)).item(), 0.f);
}

const char* kImages = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";

TEST(ResNetRunConfig, HingeIsTheDefaultLossOfResNetModels) {
  if (!std::filesystem::exists(kImages)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  nlohmann::json cfg = {{"data", {{"type", "idx"}, {"images", kImages}, {"transforms", {{"pad", 2}}}}},
                        {"generator", {{"type", "resnet"}, {"ch", 8}}},
                        {"discriminator", {{"type", "resnet"}, {"ch", 8}}},
                        {"train", {{"steps", 3}, {"global_batch_size", 4}}}};
  RunSetup run = resolve_run_config(cfg, "run.json");
  EXPECT_EQ(run.resolved["loss"]["type"], "hinge");
  EXPECT_EQ(run.spec.noise_shape, Shape({100}));
  EXPECT_EQ(run.resolved["discriminator"]["spectral_norm"], true);
  // the user's choice wins
  cfg["loss"] = {{"type", "non_saturating"}};
  EXPECT_EQ(resolve_run_config(cfg, "run.json").resolved["loss"]["type"], "non_saturating");
  // dcgan keeps its default
  cfg.erase("loss");
  cfg["generator"] = {{"type", "dcgan"}, {"ngf", 8}};
  cfg["discriminator"] = {{"type", "dcgan"}, {"ndf", 8}};
  EXPECT_EQ(resolve_run_config(cfg, "run.json").resolved["loss"]["type"], "non_saturating");
}

}  // namespace
}  // namespace gantry::gan
