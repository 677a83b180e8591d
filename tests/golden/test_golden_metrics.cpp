// FID, KID, precision/recall and the Inception score of fixed feature sets against NumPy/SciPy
// (tests/golden/make_metrics_golden.py wrote data/metrics.json).
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "golden/metrics_features.h"
#include "metrics/feature_moments.h"
#include "metrics/frechet_distance.h"
#include "metrics/inception_score.h"
#include "metrics/kernel_distance.h"
#include "metrics/precision_recall.h"
#include "support/test_paths.h"

namespace gantry {
namespace {

class GoldenMetrics : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ifstream f(testing::golden_dir() + "/metrics.json");
    ASSERT_TRUE(f.good());
    golden_ = nlohmann::json::parse(f);
    real_ = features("real");
    fake_ = features("fake");
  }
  Tensor features(const char* name) const {
    const auto& spec = golden_["features"][name];
    return test::hashed_features(spec[0].get<int64_t>(), spec[1].get<int64_t>(), spec[2].get<uint32_t>(),
                                 spec[3].get<double>(), spec[4].get<double>());
  }
  static metrics::FeatureMoments moments(const Tensor& x) {
    metrics::FeatureMoments m;
    m.add(x);
    return m;
  }
  nlohmann::json golden_;
  Tensor real_, fake_;
};

TEST_F(GoldenMetrics, FidMatchesPytorchFidScipySqrtm) {
  const double fid = metrics::frechet_distance(moments(real_), moments(fake_)).value;
  EXPECT_NEAR(fid, golden_["fid_real_fake"].get<double>(), 1e-9);
  const double half = metrics::frechet_distance(moments(real_), moments(ops::slice(real_, 0, 0, 150))).value;
  EXPECT_NEAR(half, golden_["fid_real_real_half"].get<double>(), 1e-10);
}

TEST_F(GoldenMetrics, KidMatchesStyleGan2AdaOnWholeSets) {
  metrics::KernelDistanceOptions o;
  o.num_subsets = 3;
  const metrics::KernelDistance kid = metrics::kernel_distance(ops::slice(real_, 0, 0, 200), fake_, o);
  EXPECT_EQ(kid.subset_size, 200);
  EXPECT_NEAR(kid.value, golden_["kid_real200_fake"].get<double>(), 1e-10);
  EXPECT_NEAR(kid.std, 0.0, 1e-12);  // every subset is the whole set
}

TEST_F(GoldenMetrics, PrecisionRecallMatchKnnRadiiWithCdist) {
  const metrics::PrecisionRecall pr = metrics::precision_recall(real_, fake_);
  EXPECT_DOUBLE_EQ(pr.precision, golden_["precision_k3"].get<double>());
  EXPECT_DOUBLE_EQ(pr.recall, golden_["recall_k3"].get<double>());
  metrics::PrecisionRecallOptions small_blocks;
  small_blocks.row_block = 7;  // blocking does not change the answer
  const metrics::PrecisionRecall blocked = metrics::precision_recall(real_, fake_, small_blocks);
  EXPECT_DOUBLE_EQ(blocked.precision, pr.precision);
  EXPECT_DOUBLE_EQ(blocked.recall, pr.recall);
}

TEST_F(GoldenMetrics, InceptionScoreMatchesSplitLoop) {
  const metrics::InceptionScore is = metrics::inception_score(features("logits"), 10);
  EXPECT_NEAR(is.mean, golden_["is_mean"].get<double>(), 1e-10);
  EXPECT_NEAR(is.std, golden_["is_std"].get<double>(), 1e-10);
}

}  // namespace
}  // namespace gantry
