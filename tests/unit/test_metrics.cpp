// Metric math (metrics/): moments merged across shards equal one pass, closed-form FIDs, KID's
// seeded subsets, precision/recall and the Inception score on sets with known answers.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"
#include "core/ops/ops.h"
#include "metrics/feature_moments.h"
#include "metrics/frechet_distance.h"
#include "metrics/inception_score.h"
#include "metrics/kernel_distance.h"
#include "metrics/precision_recall.h"

namespace gantry {
namespace {

// (n, d) standard normal features times per-column scales plus per-column means.
Tensor gaussian(int64_t n, const std::vector<double>& means, const std::vector<double>& scales, uint64_t seed) {
  const int64_t d = static_cast<int64_t>(means.size());
  std::vector<float> v = ops::randn(Shape{n, d}, RngKey{seed, 7}).to_vector();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      float& x = v[static_cast<size_t>(i * d + j)];
      x = static_cast<float>(x * scales[static_cast<size_t>(j)] + means[static_cast<size_t>(j)]);
    }
  return ops::from_vector(v, Shape{n, d});
}

TEST(FeatureMoments, MergedShardsEqualOnePass) {
  const Tensor x = gaussian(1000, {100, -3, 0.5, 7}, {1, 2, 0.1, 5}, 1);
  metrics::FeatureMoments one;
  one.add(x);
  metrics::FeatureMoments a, b, c;  // uneven shards, built in two batches each
  a.add(ops::slice(x, 0, 0, 100));
  a.add(ops::slice(x, 0, 100, 333));
  b.add(ops::slice(x, 0, 333, 334));
  c.add(ops::slice(x, 0, 334, 1000));
  a.merge(b);
  a.merge(c);
  ASSERT_EQ(a.count(), 1000);
  for (size_t i = 0; i < one.mean().size(); ++i) EXPECT_NEAR(a.mean()[i], one.mean()[i], 1e-12 * (1 + std::abs(one.mean()[i])));
  const std::vector<double> ca = a.covariance(), co = one.covariance();
  for (size_t i = 0; i < co.size(); ++i) EXPECT_NEAR(ca[i], co[i], 1e-12 * (1 + std::abs(co[i])));
  // and the covariance is the sample covariance: column 3 has variance ~25
  EXPECT_NEAR(co[3 * 4 + 3], 25.0, 2.5);
  EXPECT_NEAR(one.mean()[0], 100.0, 0.1);
}

TEST(FeatureMoments, SerializeRoundTripsAndRejectsWrongSizes) {
  metrics::FeatureMoments m;
  m.add(gaussian(50, {1, 2, 3}, {1, 1, 1}, 2));
  const std::vector<double> flat = m.serialize();
  ASSERT_EQ(flat.size(), metrics::FeatureMoments::serialized_size(3));
  const metrics::FeatureMoments back = metrics::FeatureMoments::deserialize(flat, "test");
  EXPECT_EQ(back.count(), 50);
  EXPECT_EQ(back.serialize(), flat);
  std::vector<double> short_flat(flat.begin(), flat.end() - 1);
  EXPECT_THROW(metrics::FeatureMoments::deserialize(short_flat, "cache.bin"), Error);
  metrics::FeatureMoments other(4);
  EXPECT_THROW(m.merge(other), Error);
}

TEST(FrechetDistance, IdenticalGaussiansGiveZero) {
  const std::vector<double> mean{1, 2, 3};
  const std::vector<double> cov{2, 0.5, 0, 0.5, 1, 0.2, 0, 0.2, 3};
  EXPECT_NEAR(metrics::frechet_distance(mean, cov, mean, cov).value, 0.0, 1e-12);
}

TEST(FrechetDistance, DiagonalGaussiansFollowTheFormula) {
  // Diagonal covariances commute: FID = |mu1-mu2|^2 + sum (sqrt(a_i) - sqrt(b_i))^2.
  const std::vector<double> m1{0, 1, 2, 3}, m2{1, 1, 0, 3};
  const std::vector<double> a{1, 4, 9, 0.25}, b{4, 1, 9, 1};
  std::vector<double> c1(16, 0.0), c2(16, 0.0);
  double expected = 1 + 0 + 4 + 0;
  for (int i = 0; i < 4; ++i) {
    c1[static_cast<size_t>(i * 5)] = a[static_cast<size_t>(i)];
    c2[static_cast<size_t>(i * 5)] = b[static_cast<size_t>(i)];
    const double r = std::sqrt(a[static_cast<size_t>(i)]) - std::sqrt(b[static_cast<size_t>(i)]);
    expected += r * r;
  }
  const metrics::FrechetDistance d = metrics::frechet_distance(m1, c1, m2, c2);
  EXPECT_NEAR(d.value, expected, 1e-12);
  EXPECT_NEAR(d.mean_term, 5.0, 1e-12);
}

TEST(FrechetDistance, SampledSetsApproachTheGaussianFormula) {
  const metrics::FeatureMoments a = [] { metrics::FeatureMoments m; m.add(gaussian(20000, {0, 0}, {1, 1}, 3)); return m; }();
  const metrics::FeatureMoments b = [] { metrics::FeatureMoments m; m.add(gaussian(20000, {3, 0}, {2, 1}, 4)); return m; }();
  EXPECT_NEAR(metrics::frechet_distance(a, b).value, 9.0 + 1.0, 0.15);  // 3^2 + (2 - 1)^2
  EXPECT_THROW(metrics::frechet_distance(a, metrics::FeatureMoments(3)), Error);
}

TEST(KernelDistance, SeededSubsetsAreReproducibleAndSeparateDistributions) {
  const Tensor real = gaussian(600, {0, 0, 0}, {1, 1, 1}, 5);
  const Tensor same = gaussian(600, {0, 0, 0}, {1, 1, 1}, 6);
  const Tensor shifted = gaussian(600, {2, 0, 0}, {1, 1, 1}, 7);
  metrics::KernelDistanceOptions o;
  o.num_subsets = 20;
  o.max_subset_size = 300;
  const metrics::KernelDistance k1 = metrics::kernel_distance(real, shifted, o);
  const metrics::KernelDistance k2 = metrics::kernel_distance(real, shifted, o);
  EXPECT_EQ(k1.value, k2.value);
  EXPECT_EQ(k1.subset_size, 300);
  EXPECT_GT(k1.std, 0.0);
  const metrics::KernelDistance k_same = metrics::kernel_distance(real, same, o);
  EXPECT_LT(std::abs(k_same.value), 0.02);  // unbiased: ~0 for one distribution
  EXPECT_GT(k1.value, 10 * std::abs(k_same.value) + 0.1);
  o.seed = 1;
  EXPECT_NE(metrics::kernel_distance(real, shifted, o).value, k1.value);
}

TEST(PrecisionRecall, DisjointAndIdenticalSets) {
  const Tensor real = gaussian(400, {0, 0}, {1, 1}, 8);
  const metrics::PrecisionRecall self = metrics::precision_recall(real, real);
  EXPECT_DOUBLE_EQ(self.precision, 1.0);
  EXPECT_DOUBLE_EQ(self.recall, 1.0);
  const metrics::PrecisionRecall far = metrics::precision_recall(real, gaussian(300, {100, 0}, {1, 1}, 9));
  EXPECT_DOUBLE_EQ(far.precision, 0.0);
  EXPECT_DOUBLE_EQ(far.recall, 0.0);
  // A fake set collapsed into a small part of the real one: precise, poor recall.
  const metrics::PrecisionRecall collapsed = metrics::precision_recall(real, gaussian(300, {0, 0}, {0.05, 0.05}, 10));
  EXPECT_GT(collapsed.precision, 0.95);
  EXPECT_LT(collapsed.recall, 0.3);
  EXPECT_THROW(metrics::precision_recall(ops::slice(real, 0, 0, 3), real), Error);  // k = 3 needs > 3 rows
}

TEST(InceptionScore, ConfidentBalancedPredictionsScoreTheClassCount) {
  const int64_t n = 100, k = 5;
  std::vector<float> logits(static_cast<size_t>(n * k), 0.f);
  for (int64_t i = 0; i < n; ++i) logits[static_cast<size_t>(i * k + i % k)] = 50.f;
  EXPECT_NEAR(metrics::inception_score(ops::from_vector(logits, Shape{n, k}), 10).mean, 5.0, 1e-6);
  EXPECT_NEAR(metrics::inception_score(ops::zeros(Shape{n, k}), 10).mean, 1.0, 1e-12);  // uniform: 1
  EXPECT_THROW(metrics::inception_score(ops::zeros(Shape{5, k}), 10), Error);
}

}  // namespace
}  // namespace gantry
