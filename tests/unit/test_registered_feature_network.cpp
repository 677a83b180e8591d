// A registered discriminator with a checkpoint's weights as a feature network
// (metrics/registered_feature_network.h): features are the named child's output, the weights are
// the file's tensors under a prefix, and a mismatch names the file and the expected tensors.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "core/autograd/grad_mode.h"
#include "core/ops/ops.h"
#include "gan/networks/network_registry.h"
#include "metrics/sequential_feature_network.h"
#include "nn/safetensors.h"
#include "nn/sequential.h"
#include "support/temp_dir.h"

namespace gantry {
namespace {

const nlohmann::json kDcgan = {{"type", "dcgan"}, {"ndf", 8}};

// A trained-looking dcgan discriminator for 1x32x32 images, saved as a checkpoint would
// ("discriminator." tensors beside others).
nn::ModulePtr save_discriminator(const std::string& file) {
  nlohmann::json config = kDcgan;
  gan::NetworkContext ctx;
  ctx.image_shape = {1, 32, 32};
  nn::ModulePtr d = gan::make_discriminator(config, "d", ctx).fn(Device::cpu(), RngKey{5, 9});
  nn::NamedTensors tensors;
  for (const auto& [name, t] : d->state_dict()) tensors.emplace_back("discriminator." + name, t);
  tensors.emplace_back("generator.0.weight", ops::zeros(Shape{2, 2}));
  nn::write_safetensors(file, tensors);
  d->eval();
  return d;
}

nlohmann::json description(const std::string& file, const std::string& prefix) {
  return {{"type", "discriminator"}, {"network", kDcgan}, {"input_shape", {1, 32, 32}},
          {"weights", file},         {"prefix", prefix},   {"feature_layer", 4}};
}

TEST(RegisteredFeatureNetwork, FeaturesAreTheNamedChildsOutputWithTheCheckpointsWeights) {
  testing::TempDir dir;
  const std::string file = dir.file("ckpt.safetensors");
  nn::ModulePtr d = save_discriminator(file);
  nlohmann::json spec = description(file, "discriminator.");
  auto net = metrics::make_feature_network(spec, "network");
  const Tensor images = ops::tanh(ops::randn(Shape{3, 1, 32, 32}, RngKey{2, 2}));
  const metrics::FeatureBatch out = net->extract(images);
  NoGradGuard no_grad;
  Tensor x = images;
  auto& seq = static_cast<nn::Sequential&>(*d);
  for (size_t i = 0; i <= 4; ++i) x = seq[i]->forward(x);
  ASSERT_EQ(out.features.shape(), (Shape{3, x.numel() / 3}));
  EXPECT_EQ(net->feature_dim(), x.numel() / 3);
  EXPECT_LE(ops::amax(ops::abs(out.features - ops::reshape(x, out.features.shape()))).item(), 1e-6f);
  EXPECT_GT(ops::amax(ops::abs(out.features)).item(), 1e-3f);
  EXPECT_FALSE(net->has_logits());
  EXPECT_NE(net->identity().find("weights_fnv1a"), std::string::npos);
  // the same on a second device, as replicas get it
  EXPECT_EQ(ops::amax(ops::abs(net->clone_to(Device::cpu(1))->extract(images).features - out.features)).item(), 0.f);
}

TEST(RegisteredFeatureNetwork, WrongPrefixNamesTheFileAndTheExpectedTensors) {
  testing::TempDir dir;
  const std::string file = dir.file("ckpt.safetensors");
  save_discriminator(file);
  nlohmann::json spec = description(file, "");  // generator.* and discriminator.* are unexpected
  try {
    (void)metrics::make_feature_network(spec, "network");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string err = e.what();
    EXPECT_NE(err.find(file), std::string::npos) << err;
    EXPECT_NE(err.find("expected tensors"), std::string::npos) << err;
    EXPECT_NE(err.find("0.weight"), std::string::npos) << err;
  }
  nlohmann::json bad_layer = description(file, "discriminator.");
  bad_layer["feature_layer"] = 99;
  EXPECT_THROW(metrics::make_feature_network(bad_layer, "network"), Error);
}

}  // namespace
}  // namespace gantry
