// Metric math (metrics/): moments merged across shards equal one pass, closed-form FIDs, KID's
// seeded subsets, precision/recall and the Inception score on sets with known answers.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"
#include "core/ops/ops.h"
#include "metrics/density_coverage.h"
#include "metrics/feature_moments.h"
#include "metrics/frechet_distance.h"
#include "metrics/generated_features.h"
#include "metrics/inception_score.h"
#include "metrics/intra_class_fid.h"
#include "metrics/kernel_distance.h"
#include "metrics/metric_selection.h"
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

TEST(DensityCoverage, IdenticalSetsScoreOneAndFarSetsZero) {
  const Tensor real = gaussian(400, {0, 0, 0}, {1, 1, 1}, 8);
  // Open balls: each real ball holds its own copy and k - 1 neighbours, so exactly k of the
  // copies (Note [open and closed k-NN balls]); the k-th neighbour's copy lies exactly on the
  // radius because d(a, b) and d(b, a) are the same bits (metrics/knn_balls.cpp).
  const metrics::DensityCoverage self = metrics::density_coverage(real, real);
  EXPECT_DOUBLE_EQ(self.density, 1.0);
  EXPECT_DOUBLE_EQ(self.coverage, 1.0);
  const metrics::DensityCoverage far = metrics::density_coverage(real, gaussian(300, {100, 0, 0}, {1, 1, 1}, 9));
  EXPECT_DOUBLE_EQ(far.density, 0.0);
  EXPECT_DOUBLE_EQ(far.coverage, 0.0);
  // Row blocks do not change the answer.
  const Tensor fake = gaussian(300, {0.3, 0, 0}, {1.2, 1, 0.8}, 11);
  metrics::DensityCoverageOptions blocked;
  blocked.row_block = 7;
  const metrics::DensityCoverage a = metrics::density_coverage(real, fake), b = metrics::density_coverage(real, fake, blocked);
  EXPECT_DOUBLE_EQ(a.density, b.density);
  EXPECT_DOUBLE_EQ(a.coverage, b.coverage);
  EXPECT_GT(a.coverage, 0.3);
  EXPECT_LT(a.coverage, 1.0);
}

TEST(DensityCoverage, SameDistributionNearExpectationCollapseAndCrowding) {
  // Independent samples of one distribution: E[density] = 1, E[coverage] = 1 - prod (N - i) /
  // (N + M - i) over i = 1..k (Naeem et al., Lemma 2) = 0.9697 for N = M = 1000, k = 5.
  const Tensor real = gaussian(1000, {0, 0, 0, 0}, {1, 1, 1, 1}, 20);
  const metrics::DensityCoverage same = metrics::density_coverage(real, gaussian(1000, {0, 0, 0, 0}, {1, 1, 1, 1}, 21));
  EXPECT_NEAR(same.density, 1.0, 0.08);
  EXPECT_NEAR(same.coverage, 0.9697, 0.03);
  // A generator collapsed onto the mode: every fake is realistic (it sits where the real balls
  // are densest, so density is above 1: 1.26 here), but few real balls are reached (coverage).
  const metrics::DensityCoverage collapsed =
      metrics::density_coverage(real, gaussian(1000, {0, 0, 0, 0}, {0.1, 0.1, 0.1, 0.1}, 22));
  EXPECT_GT(collapsed.density, 1.1);
  EXPECT_LT(collapsed.coverage, 0.1);
  // Half the fakes off the data: density halves, coverage drops only a little.
  std::vector<float> half = gaussian(1000, {0, 0, 0, 0}, {1, 1, 1, 1}, 21).to_vector();
  for (size_t i = 0; i < half.size() / 2; i += 4) half[i] += 50.0f;
  const metrics::DensityCoverage outliers = metrics::density_coverage(real, ops::from_vector(half, Shape{1000, 4}));
  EXPECT_NEAR(outliers.density, same.density / 2, 0.1);
  EXPECT_GT(outliers.coverage, 0.75);
  EXPECT_LT(outliers.coverage, same.coverage);
  // k is the neighbourhood size; more than k real rows are needed.
  metrics::DensityCoverageOptions k3;
  k3.k = 3;
  EXPECT_NE(metrics::density_coverage(real, ops::slice(real, 0, 0, 10), k3).density, 0.0);
  EXPECT_THROW(metrics::density_coverage(ops::slice(real, 0, 0, 5), real), Error);  // k = 5 needs > 5 rows
  EXPECT_THROW(metrics::density_coverage(real, gaussian(10, {0, 0}, {1, 1}, 23)), Error);  // dimensions differ
}

TEST(DensityCoverage, SelectedAsDcOrDensityCoverage) {
  EXPECT_TRUE(metrics::MetricSelection::parse("fid,dc", "--metrics").dc);
  EXPECT_TRUE(metrics::MetricSelection::parse("density_coverage", "--metrics").dc);
  EXPECT_TRUE(metrics::MetricSelection::parse("dc", "--metrics").needs_real_features());
  const metrics::MetricSelection intra = metrics::MetricSelection::parse("intra_fid", "--metrics");
  EXPECT_TRUE(intra.intra_fid && intra.needs_real() && !intra.needs_real_features());
  try {
    (void)metrics::MetricSelection::parse("fid,prdc", "--metrics");
    ADD_FAILURE() << "prdc accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dc (or density_coverage)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"prdc\""), std::string::npos) << e.what();
  }
  const Tensor real = gaussian(100, {0, 0}, {1, 1}, 30), fake = gaussian(80, {0.5, 0}, {1, 1}, 31);
  metrics::FeatureBatch r{real, Tensor()}, f{fake, Tensor()};
  metrics::MetricInputs in;
  in.real = &r;
  in.fake = &f;
  in.dc.k = 3;
  const nlohmann::json row = metrics::compute_metrics(metrics::MetricSelection::parse("dc", "m"), in);
  metrics::DensityCoverageOptions k3;
  k3.k = 3;
  EXPECT_EQ(row["density"].get<double>(), metrics::density_coverage(real, fake, k3).density);
  EXPECT_EQ(row["coverage"].get<double>(), metrics::density_coverage(real, fake, k3).coverage);
}

TEST(IntraClassFid, PerClassFidsAndTheirMean) {
  // Class c of the reals is N(c, 1) in 2-d; the fakes follow the generated labels i % 3, class 0
  // exact in distribution, class 1 shifted by 1 in one coordinate, class 2 swapped with class 0.
  const int64_t n = 3000;
  const Tensor base = gaussian(n, {0, 0}, {1, 1}, 40), fake_base = gaussian(n, {0, 0}, {1, 1}, 41);
  std::vector<float> real_v = base.to_vector(), fake_v = fake_base.to_vector();
  std::vector<int64_t> real_labels(static_cast<size_t>(n));
  const std::vector<int64_t> fake_labels = metrics::generated_labels(n, 3);
  ASSERT_EQ(fake_labels[4], 1);
  ASSERT_EQ(metrics::generated_label(5, 3), 2);
  const double real_shift[3] = {0, 1, 2}, fake_shift[3] = {0, 2, 0};
  for (int64_t i = 0; i < n; ++i) {
    real_labels[static_cast<size_t>(i)] = (i * 7) % 3;  // another order than the fakes'
    real_v[static_cast<size_t>(2 * i)] += static_cast<float>(real_shift[real_labels[static_cast<size_t>(i)]]);
    fake_v[static_cast<size_t>(2 * i)] += static_cast<float>(fake_shift[fake_labels[static_cast<size_t>(i)]]);
  }
  const Tensor real = ops::from_vector(real_v, Shape{n, 2}), fake = ops::from_vector(fake_v, Shape{n, 2});
  const auto real_m = metrics::class_moments(real, real_labels, 3, "real");
  const auto fake_m = metrics::class_moments(fake, fake_labels, 3, "fake");
  ASSERT_EQ(real_m.size(), 3u);
  EXPECT_EQ(real_m[0].count() + real_m[1].count() + real_m[2].count(), n);
  const metrics::IntraClassFid f = metrics::intra_class_fid(real_m, fake_m);
  ASSERT_EQ(f.per_class.size(), 3u);
  // FID of N(a, I) vs N(b, I) is |a - b|^2 (plus sampling noise): 0, 1, 4.
  EXPECT_NEAR(f.per_class[0], 0.0, 0.02);
  EXPECT_NEAR(f.per_class[1], 1.0, 0.1);
  EXPECT_NEAR(f.per_class[2], 4.0, 0.3);
  EXPECT_DOUBLE_EQ(f.mean, (f.per_class[0] + f.per_class[1] + f.per_class[2]) / 3.0);
  // Each class on its own equals the FID of that class's rows.
  std::vector<float> class1;
  for (int64_t i = 0; i < n; ++i)
    if (real_labels[static_cast<size_t>(i)] == 1) class1.insert(class1.end(), {real_v[2 * i], real_v[2 * i + 1]});
  metrics::FeatureMoments m1;
  m1.add(ops::from_vector(class1, Shape{static_cast<int64_t>(class1.size() / 2), 2}));
  EXPECT_EQ(m1.serialize(), real_m[1].serialize());

  // A class without 2 images on a side is an error naming it; labels out of range too.
  std::vector<int64_t> one_in_class2(static_cast<size_t>(n), 0);
  one_in_class2[0] = 2;
  try {
    (void)metrics::intra_class_fid(metrics::class_moments(real, one_in_class2, 3, "real"), fake_m);
    ADD_FAILURE() << "a class with one image accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("class 1"), std::string::npos) << e.what();  // class 1 has none
  }
  std::vector<int64_t> bad = real_labels;
  bad[3] = 3;
  EXPECT_THROW(metrics::class_moments(real, bad, 3, "real"), Error);
  EXPECT_THROW(metrics::class_moments(real, std::vector<int64_t>(5, 0), 3, "real"), Error);
}

TEST(IntraClassFid, ComputeMetricsNeedsClassesAndLabels) {
  const Tensor fake = gaussian(30, {0, 0}, {1, 1}, 50);
  metrics::FeatureBatch f{fake, Tensor()};
  metrics::MetricInputs in;
  in.fake = &f;
  try {
    (void)metrics::compute_metrics(metrics::MetricSelection::parse("intra_fid", "m"), in);
    ADD_FAILURE() << "intra_fid without classes accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("class-conditional"), std::string::npos) << e.what();
  }
  const std::vector<int64_t> labels = metrics::generated_labels(30, 2);
  const std::vector<metrics::FeatureMoments> real = metrics::class_moments(gaussian(40, {0, 0}, {1, 1}, 51),
                                                                           metrics::generated_labels(40, 2), 2, "r");
  in.real_class_moments = &real;
  in.fake_labels = &labels;
  const nlohmann::json row = metrics::compute_metrics(metrics::MetricSelection::parse("intra_fid", "m"), in);
  ASSERT_EQ(row["intra_fid_per_class"].size(), 2u);
  EXPECT_DOUBLE_EQ(row["intra_fid"].get<double>(),
                   (row["intra_fid_per_class"][0].get<double>() + row["intra_fid_per_class"][1].get<double>()) / 2);
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
