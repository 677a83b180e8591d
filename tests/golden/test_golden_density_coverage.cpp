// Density/coverage and intra-class FID of committed feature arrays against a NumPy reference
// (tests/golden/make_density_coverage_golden.py wrote data/density_coverage.json from
// data/density_coverage_{real,real_labels,fake}.npy).
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/npy.h"
#include "core/ops/ops.h"
#include "metrics/density_coverage.h"
#include "metrics/feature_moments.h"
#include "metrics/frechet_distance.h"
#include "metrics/generated_features.h"
#include "metrics/intra_class_fid.h"
#include "support/test_paths.h"

namespace gantry {
namespace {

class GoldenDensityCoverage : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ifstream f(dir() + "/density_coverage.json");
    ASSERT_TRUE(f.good());
    golden_ = nlohmann::json::parse(f);
    real_ = nn::read_npy(dir() + "/" + golden_["arrays"]["real"].get<std::string>());
    fake_ = nn::read_npy(dir() + "/" + golden_["arrays"]["fake"].get<std::string>());
    const Tensor labels = nn::read_npy(dir() + "/" + golden_["arrays"]["real_labels"].get<std::string>());
    ASSERT_EQ(labels.dtype(), DType::I64);
    real_labels_.assign(labels.data<int64_t>(), labels.data<int64_t>() + labels.numel());
    classes_ = golden_["arrays"]["classes"].get<int64_t>();
  }
  static std::string dir() { return testing::golden_dir(); }
  static metrics::DensityCoverage dc(const Tensor& real, const Tensor& fake, int64_t k, int64_t row_block = 1024) {
    metrics::DensityCoverageOptions o;
    o.k = k;
    o.row_block = row_block;
    return metrics::density_coverage(real, fake, o);
  }
  nlohmann::json golden_;
  Tensor real_, fake_;
  std::vector<int64_t> real_labels_;
  int64_t classes_ = 0;
};

// The counts are integers over kM and N, and no distance lies within 1e-9 (relative) of a
// radius (the script checks it), so the values agree exactly.
TEST_F(GoldenDensityCoverage, DensityAndCoverageMatchPrdc) {
  ASSERT_EQ(real_.shape(), Shape({150, 6}));
  ASSERT_EQ(fake_.shape(), Shape({120, 6}));
  for (int64_t k : {5, 3}) {
    const metrics::DensityCoverage v = dc(real_, fake_, k);
    EXPECT_DOUBLE_EQ(v.density, golden_["density_k" + std::to_string(k)].get<double>()) << "k = " << k;
    EXPECT_DOUBLE_EQ(v.coverage, golden_["coverage_k" + std::to_string(k)].get<double>()) << "k = " << k;
    const metrics::DensityCoverage blocked = dc(real_, fake_, k, 7);  // blocking does not change the answer
    EXPECT_DOUBLE_EQ(blocked.density, v.density);
    EXPECT_DOUBLE_EQ(blocked.coverage, v.coverage);
  }
  EXPECT_DOUBLE_EQ(metrics::density_coverage(real_, fake_).density, golden_["density_k5"].get<double>());  // k = 5 default
}

// The identical-set case is all ties (each ball's k-th neighbour lies exactly on its radius):
// both sides count k copies per open ball because d(a, b) and d(b, a) are the same bits.
TEST_F(GoldenDensityCoverage, RealAgainstItselfIsExactlyOne) {
  const metrics::DensityCoverage v = dc(real_, real_, 5);
  EXPECT_DOUBLE_EQ(v.density, golden_["density_real_real_k5"].get<double>());
  EXPECT_DOUBLE_EQ(v.coverage, golden_["coverage_real_real_k5"].get<double>());
  EXPECT_DOUBLE_EQ(dc(real_, real_, 5, 7).density, 1.0);
}

TEST_F(GoldenDensityCoverage, IntraClassFidMatchesNumpy) {
  const std::vector<int64_t> fake_labels = metrics::generated_labels(fake_.size(0), classes_);
  const std::vector<metrics::FeatureMoments> real = metrics::class_moments(real_, real_labels_, classes_, "real");
  const std::vector<metrics::FeatureMoments> fake = metrics::class_moments(fake_, fake_labels, classes_, "fake");
  for (int64_t c = 0; c < classes_; ++c) {
    EXPECT_EQ(real[static_cast<size_t>(c)].count(), golden_["class_counts_real"][c].get<int64_t>());
    EXPECT_EQ(fake[static_cast<size_t>(c)].count(), golden_["class_counts_fake"][c].get<int64_t>());
  }
  const metrics::IntraClassFid f = metrics::intra_class_fid(real, fake);
  ASSERT_EQ(f.per_class.size(), static_cast<size_t>(classes_));
  for (int64_t c = 0; c < classes_; ++c)
    EXPECT_NEAR(f.per_class[static_cast<size_t>(c)], golden_["intra_fid_per_class"][c].get<double>(), 1e-9)
        << "class " << c;
  EXPECT_NEAR(f.mean, golden_["intra_fid"].get<double>(), 1e-9);
  metrics::FeatureMoments all_real, all_fake;
  all_real.add(real_);
  all_fake.add(fake_);
  EXPECT_NEAR(metrics::frechet_distance(all_real, all_fake).value, golden_["fid_all"].get<double>(), 1e-9);
}

}  // namespace
}  // namespace gantry
