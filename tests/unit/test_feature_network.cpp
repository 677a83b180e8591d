// Sequential feature networks (metrics/sequential_feature_network.h): features are child
// "feature_layer"'s output, logits the last child's, weights load strictly with errors naming
// the file and the expected tensors, and images of another size or channel count are adapted.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "base/error.h"
#include "core/autograd/grad_mode.h"
#include "core/ops/ops.h"
#include "metrics/feature_network.h"
#include "metrics/sequential_feature_network.h"
#include "nn/sequential_builder.h"
#include "nn/state_dict.h"
#include "support/temp_dir.h"
#include "support/tiny_feature_network.h"

namespace gantry {
namespace {

std::unique_ptr<metrics::FeatureNetwork> load(const std::string& file) {
  nlohmann::json spec = {{"file", file}};
  return metrics::make_feature_network(spec, "network");
}

TEST(SequentialFeatureNetwork, FeaturesAreTheNamedChildsOutput) {
  testing::TempDir dir;
  const std::string file = testing::write_tiny_feature_network(dir.path());
  auto net = load(file);
  EXPECT_EQ(net->feature_dim(), 8);
  EXPECT_TRUE(net->has_logits());
  const Tensor images = ops::tanh(ops::randn(Shape{5, 1, 8, 8}, RngKey{9, 1}));
  const metrics::FeatureBatch out = net->extract(images, true);
  ASSERT_EQ(out.features.shape(), (Shape{5, 8}));
  ASSERT_EQ(out.logits.shape(), (Shape{5, 3}));

  // the same network by hand: children 0..4, then 5
  nn::BuiltSequential ref = nn::build_sequential(testing::tiny_feature_layers(), {1, 8, 8});
  nn::load_state_dict(*ref.net, dir.file("features.safetensors"));
  ref.net->eval();
  NoGradGuard no_grad;
  Tensor x = images;
  for (size_t i = 0; i <= 4; ++i) x = (*ref.net)[i]->forward(x);
  EXPECT_EQ(out.features.to_vector(), x.to_vector());
  EXPECT_EQ(out.logits.to_vector(), (*ref.net)[5]->forward(x).to_vector());

  // batched extraction gives the same rows (up to the batch-size-dependent float kernels)
  const metrics::FeatureBatch batched = metrics::extract_in_batches(*net, images, 2, true);
  const std::vector<float> b = batched.features.to_vector(), whole = out.features.to_vector();
  ASSERT_EQ(b.size(), whole.size());
  for (size_t i = 0; i < b.size(); ++i) EXPECT_NEAR(b[i], whole[i], 1e-6f);
  // a clone gives the same features
  EXPECT_EQ(net->clone_to(Device::cpu())->extract(images).features.to_vector(), out.features.to_vector());
}

TEST(SequentialFeatureNetwork, IdentityFollowsTheWeights) {
  testing::TempDir dir;
  auto a = load(testing::write_tiny_feature_network(dir.path(), "a", {1, 8, 8}, 1));
  auto b = load(testing::write_tiny_feature_network(dir.path(), "b", {1, 8, 8}, 2));
  auto a2 = load(testing::write_tiny_feature_network(dir.path(), "a2", {1, 8, 8}, 1));
  EXPECT_NE(a->identity(), b->identity());
  EXPECT_EQ(a->identity(), a2->identity());
}

TEST(SequentialFeatureNetwork, MissingOrMismatchingWeightsNameTheFileAndTensors) {
  testing::TempDir dir;
  const std::string file = testing::write_tiny_feature_network(dir.path());
  std::filesystem::remove(dir.file("features.safetensors"));
  try {
    load(file);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("features.safetensors"), std::string::npos) << what;
    EXPECT_NE(what.find("not found"), std::string::npos) << what;
    EXPECT_NE(what.find("3.weight (8, 64)"), std::string::npos) << what;
  }
  // weights of a network with another width
  nlohmann::json layers = testing::tiny_feature_layers();
  layers[0]["out"] = 6;
  nn::BuiltSequential other = nn::build_sequential(layers, {1, 8, 8});
  nn::save_state_dict(*other.net, dir.file("features.safetensors"));
  try {
    load(file);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("features.safetensors"), std::string::npos) << what;
    EXPECT_NE(what.find("0.weight"), std::string::npos) << what;
    EXPECT_NE(what.find("expected tensors"), std::string::npos) << what;
  }
}

TEST(SequentialFeatureNetwork, AdaptsChannelsAndSizeAndRejectsBadDescriptions) {
  testing::TempDir dir;
  auto net = load(testing::write_tiny_feature_network(dir.path()));
  const metrics::FeatureBatch rgb = net->extract(ops::zeros(Shape{2, 3, 16, 16}));
  EXPECT_EQ(rgb.features.shape(), (Shape{2, 8}));
  // a constant image stays constant through averaging and resizing
  EXPECT_EQ(rgb.features.to_vector(), net->extract(ops::zeros(Shape{2, 1, 8, 8})).features.to_vector());

  nlohmann::json bad = {{"type", "inception"}};
  EXPECT_THROW(metrics::make_feature_network(bad, "network"), Error);
  nlohmann::json typed = {{"type", 3}};
  EXPECT_THROW(metrics::make_feature_network(typed, "network"), Error);
  nlohmann::json out_of_range = nlohmann::json::parse(std::ifstream(dir.file("features.json")));
  out_of_range["feature_layer"] = 6;
  out_of_range["weights"] = dir.file("features.safetensors");
  EXPECT_THROW(metrics::make_feature_network(out_of_range, "network"), Error);
  nlohmann::json unknown_key = nlohmann::json::parse(std::ifstream(dir.file("features.json")));
  unknown_key["weights"] = dir.file("features.safetensors");
  unknown_key["layer"] = 3;
  EXPECT_THROW(metrics::make_feature_network(unknown_key, "network"), Error);
}

}  // namespace
}  // namespace gantry
