// Generated-set moments evaluated on 2 in-process replicas (shards gathered through the
// communicator) equal those of one replica, and so does the FID; so do the all-gathered
// features and logits that KID, precision/recall and the Inception score use.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "core/ops/ops.h"
#include "distribute/strategy.h"
#include "metrics/frechet_distance.h"
#include "metrics/generated_features.h"
#include "metrics/sequential_feature_network.h"
#include "support/temp_dir.h"
#include "support/tiny_feature_network.h"
#include "support/tiny_gan.h"

namespace gantry {
namespace {

std::vector<std::unique_ptr<metrics::FeatureNetwork>> per_replica(const metrics::FeatureNetwork& net,
                                                                  const distribute::Strategy& strategy) {
  std::vector<std::unique_ptr<metrics::FeatureNetwork>> out;
  for (const Device& d : strategy.local_devices()) out.push_back(net.clone_to(d));
  return out;
}

// Moments of `n` uniform-noise images' features: a "real" set far from the generator's.
metrics::FeatureMoments noise_moments(metrics::FeatureNetwork& net, int64_t n) {
  metrics::FeatureMoments m;
  m.add(net.extract(ops::add(ops::mul(ops::rand(Shape{n, 1, 8, 8}, RngKey{11, 3}), 2.0f), -1.0f)).features);
  return m;
}

double max_relative(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]) / (1e-3 + std::abs(b[i])));
  return worst;
}

class ShardedMetrics : public ::testing::Test {
 protected:
  void SetUp() override {
    nlohmann::json spec = {{"file", testing::write_tiny_feature_network(dir_.path())}};
    net_ = metrics::make_feature_network(spec, "network");
    real_ = noise_moments(*net_, 200);
  }
  // FID of the generated set on one replica and on two (and of the set generated in one piece).
  void compare(int64_t count, int64_t batch, double tolerance) {
    gan::GanEstimator one(testing::tiny_dcgan(true), distribute::make_one_device_strategy(Device::cpu()), 7);
    gan::GanEstimator two(testing::tiny_dcgan(true),
                          distribute::make_mirrored_strategy({Device::cpu(0), Device::cpu(1)}), 7);
    ASSERT_EQ(testing::flat_gan_state(one), testing::flat_gan_state(two));
    metrics::GeneratedSetOptions options;
    options.count = count;
    options.batch_size = batch;
    options.seed = 4;
    auto nets_one = per_replica(*net_, one.strategy());
    auto nets_two = per_replica(*net_, two.strategy());
    const metrics::FeatureMoments m1 = metrics::generated_moments(one, nets_one, options);
    const metrics::FeatureMoments m2 = metrics::generated_moments(two, nets_two, options);
    ASSERT_EQ(m1.count(), count);
    ASSERT_EQ(m2.count(), count);
    EXPECT_LE(max_relative(m2.mean(), m1.mean()), tolerance);
    EXPECT_LE(max_relative(m2.covariance(), m1.covariance()), tolerance);
    const double fid1 = metrics::frechet_distance(real_, m1).value;
    const double fid2 = metrics::frechet_distance(real_, m2).value;
    EXPECT_GT(fid1, 1e-3);
    EXPECT_NEAR(fid2, fid1, tolerance * fid1);
    metrics::FeatureMoments whole;
    whole.add(metrics::generated_features(one, *net_, options).features);
    EXPECT_NEAR(metrics::frechet_distance(real_, whole).value, fid1, tolerance * fid1);
  }
  testing::TempDir dir_;
  std::unique_ptr<metrics::FeatureNetwork> net_;
  metrics::FeatureMoments real_;
};

// Shards 48 + 48 in batches of 16 cut the set where one replica's batches do: the features are
// the same floats, and only the merge's double rounding is left.
TEST_F(ShardedMetrics, FidOnTwoReplicasEqualsOneReplicaWithAlignedBatches) { compare(96, 16, 1e-12); }

// Shards 50 + 51: other batch boundaries, so the float kernels round some features differently.
TEST_F(ShardedMetrics, FidOnTwoReplicasEqualsOneReplicaWithUnevenShards) { compare(101, 16, 1e-6); }

// The features and logits all-gathered from 2 replicas (shards 50 + 51, each in whole batches
// of 10 and a remainder) are the set one replica extracts, in example order.
TEST_F(ShardedMetrics, GatheredFeaturesOnTwoReplicasEqualOneReplica) {
  gan::GanEstimator one(testing::tiny_dcgan(true), distribute::make_one_device_strategy(Device::cpu()), 7);
  gan::GanEstimator two(testing::tiny_dcgan(true), distribute::make_mirrored_strategy({Device::cpu(0), Device::cpu(1)}), 7);
  metrics::GeneratedSetOptions options;
  options.count = 101;
  options.batch_size = 10;
  options.seed = 4;
  auto nets_one = per_replica(*net_, one.strategy());
  auto nets_two = per_replica(*net_, two.strategy());
  const metrics::FeatureBatch f1 = metrics::gathered_generated_features(one, nets_one, options, true);
  const metrics::FeatureBatch f2 = metrics::gathered_generated_features(two, nets_two, options, true);
  ASSERT_EQ(f1.features.shape(), (Shape{101, net_->feature_dim()}));
  ASSERT_EQ(f2.features.shape(), f1.features.shape());
  ASSERT_EQ(f2.logits.shape(), f1.logits.shape());
  // The same images through the same network: equal up to the float kernels' batch rounding.
  EXPECT_LE(ops::amax(ops::abs(f2.features - f1.features)).item(), 1e-5f);
  EXPECT_LE(ops::amax(ops::abs(f2.logits - f1.logits)).item(), 1e-5f);
  EXPECT_GT(ops::amax(ops::abs(f1.features)).item(), 1e-2f);
  // Example 60 lives in replica 1's shard [50, 101): it must land in row 60, not elsewhere.
  const Tensor row = ops::slice(f2.features, 0, 60, 61);
  EXPECT_LE(ops::amax(ops::abs(row - ops::slice(f1.features, 0, 60, 61))).item(), 1e-5f);
  EXPECT_GT(ops::amax(ops::abs(row - ops::slice(f1.features, 0, 59, 60))).item(), 1e-4f);
}

}  // namespace
}  // namespace gantry
