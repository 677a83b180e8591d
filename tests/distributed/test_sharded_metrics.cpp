// Generated-set moments evaluated on 2 in-process replicas (shards gathered through the
// communicator) equal those of one replica, and so does the FID.
#include <cmath>

#include <gtest/gtest.h>

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

TEST(ShardedMetrics, FidOnTwoReplicasEqualsOneReplica) {
  testing::TempDir dir;
  nlohmann::json spec = {{"file", testing::write_tiny_feature_network(dir.path())}};
  std::unique_ptr<metrics::FeatureNetwork> net = metrics::make_feature_network(spec, "network");

  gan::GanEstimator one(testing::tiny_dcgan(true), distribute::make_one_device_strategy(Device::cpu()), 7);
  gan::GanEstimator two(testing::tiny_dcgan(true),
                        distribute::make_mirrored_strategy({Device::cpu(0), Device::cpu(1)}), 7);
  ASSERT_EQ(testing::flat_gan_state(one), testing::flat_gan_state(two));

  metrics::GeneratedSetOptions options;
  options.count = 101;  // uneven shards: 50 and 51
  options.batch_size = 16;
  options.seed = 4;
  auto nets_one = per_replica(*net, one.strategy());
  auto nets_two = per_replica(*net, two.strategy());
  const metrics::FeatureMoments m1 = metrics::generated_moments(one, nets_one, options);
  const metrics::FeatureMoments m2 = metrics::generated_moments(two, nets_two, options);
  ASSERT_EQ(m1.count(), 101);
  ASSERT_EQ(m2.count(), 101);
  for (size_t i = 0; i < m1.mean().size(); ++i) EXPECT_NEAR(m2.mean()[i], m1.mean()[i], 1e-9 * (1 + std::abs(m1.mean()[i])));
  const std::vector<double> c1 = m1.covariance(), c2 = m2.covariance();
  for (size_t i = 0; i < c1.size(); ++i) EXPECT_NEAR(c2[i], c1[i], 1e-9 * (1 + std::abs(c1[i])));

  // against another generated set as "real" moments
  metrics::GeneratedSetOptions other = options;
  other.seed = 5;
  const metrics::FeatureMoments real = metrics::generated_moments(one, nets_one, other);
  const double fid1 = metrics::frechet_distance(real, m1).value;
  const double fid2 = metrics::frechet_distance(real, m2).value;
  EXPECT_GT(fid1, 0.0);
  EXPECT_NEAR(fid2, fid1, 1e-9 * fid1);

  // the one-thread reference: the same set generated in one piece
  const metrics::FeatureBatch all = metrics::generated_features(one, *net, options);
  metrics::FeatureMoments whole;
  whole.add(all.features);
  EXPECT_NEAR(metrics::frechet_distance(real, whole).value, fid1, 1e-9 * fid1);
}

}  // namespace
}  // namespace gantry
