// Training with differentiable augmentation on 1 and R CPU replicas: the augmentation of an
// example depends only on its global index, so R replicas follow one device (up to float
// summation order, as without augmentation), through R1's second derivative too; the adaptive
// p is identical on every replica and equal to one device's.
#include <gtest/gtest.h>

#include <cstdio>

#include "augment/ada_pipeline.h"
#include "gan/estimator/gan_estimator.h"
#include "gan/objective/gradient_penalty_terms.h"
#include "gan/objective/real_sign_statistic.h"
#include "support/tiny_gan.h"

namespace gantry::gan {
namespace {

using testing::blobs;
using testing::max_relative_difference;
using testing::tiny_dcgan;

using testing::flat_state;

std::vector<Device> cpus(int n) {
  std::vector<Device> d;
  for (int i = 0; i < n; ++i) d.push_back(Device::cpu(i));
  return d;
}

class PHook : public Hook {
 public:
  void after_step(GanEstimator&, const StepResults& r) override {
    EXPECT_TRUE(r.augment);
    p.push_back(r.augment_p);
  }
  std::vector<double> p;
};

struct TrainedRun {
  std::vector<float> generator, discriminator;
  std::vector<double> p;
};

TrainedRun train(const GanSpec& spec, int replicas, int64_t steps, int64_t batch = 12) {
  GanEstimator est(spec, distribute::make_mirrored_strategy(cpus(replicas)), 5);
  auto hook = std::make_shared<PHook>();
  est.train(blobs(batch), steps, {hook});
  return {flat_state(*est.replica(0).generator.module), flat_state(*est.replica(0).discriminator.module), hook->p};
}

GanSpec augmented_spec(double p) {
  GanSpec spec = tiny_dcgan(false);
  augment::AugmentPolicy& policy = spec.augment.policy;
  policy.brightness = policy.saturation = policy.contrast = policy.translation = policy.cutout = true;
  spec.augment.initial_p = p;
  spec.terms.push_back(gan::make_r1_term(1.f));  // differentiates through the augmentation
  return spec;
}

// One step: the replicas differ from one device only by float summation order (~1e-7 per op,
// measured below 1e-6 here); augmentation itself moves the weights by far more (checked).
constexpr double kOneStepTolerance = 1e-5;
// As tests/distributed/test_gan_training.cpp's kEquivalenceTolerance after 20 steps.
constexpr double kTrajectoryTolerance = 1e-4;

TEST(AugmentReplicas, TwoReplicasEqualOneAfterOneStep) {
  GanSpec spec = augmented_spec(0.5);
  TrainedRun one = train(spec, 1, 1);
  TrainedRun two = train(spec, 2, 1);
  const double g = max_relative_difference(two.generator, one.generator);
  const double d = max_relative_difference(two.discriminator, one.discriminator);
  std::printf("[ measured ] augmented, 1 step, 2 replicas vs 1: G %.3g D %.3g\n", g, d);
  EXPECT_LT(g, kOneStepTolerance);
  EXPECT_LT(d, kOneStepTolerance);
  // the augmentation is really on: without it the step lands elsewhere
  GanSpec plain = spec;
  plain.augment.initial_p = 0.0;
  TrainedRun off = train(plain, 1, 1);
  EXPECT_GT(max_relative_difference(off.discriminator, one.discriminator), 1e-3);
}

TEST(AugmentReplicas, FourReplicasFollowOneDeviceFor20Steps) {
  GanSpec spec = augmented_spec(0.7);
  TrainedRun one = train(spec, 1, 20);
  TrainedRun four = train(spec, 4, 20);
  const double g = max_relative_difference(four.generator, one.generator);
  const double d = max_relative_difference(four.discriminator, one.discriminator);
  std::printf("[ measured ] augmented, 20 steps, 4 replicas vs 1: G %.3g D %.3g\n", g, d);
  EXPECT_LT(g, kTrajectoryTolerance);
  EXPECT_LT(d, kTrajectoryTolerance);
}

TEST(AugmentReplicas, AdaptivePIsTheSameOnOneAndTwoReplicas) {
  GanSpec spec = augmented_spec(0.0);
  spec.augment.adaptive.enabled = true;
  spec.terms.push_back(make_real_sign_statistic());  // the statistic p follows
  spec.augment.adaptive.interval = 2;
  spec.augment.adaptive.speed_kimg = 0.1;  // 100 images move p by 1: 24 per adjustment
  spec.augment.adaptive.target = 0.0;      // blobs are easy: D's real logits turn positive early
  TrainedRun one = train(spec, 1, 10);
  TrainedRun two = train(spec, 2, 10);
  ASSERT_EQ(one.p.size(), 10u);
  EXPECT_EQ(two.p, one.p);
  double moved = 0;
  for (double p : one.p) moved = std::max(moved, p);
  EXPECT_GT(moved, 0.2) << "p never moved";
  EXPECT_EQ(one.p[0], 0.0) << "no adjustment before `interval` D updates";
  EXPECT_LT(max_relative_difference(two.discriminator, one.discriminator), kTrajectoryTolerance);
}

// ADA's pipeline (one grid_sample per batch for the geometric part, the colour matrix after it)
// with R1 differentiating through it.
GanSpec ada_spec(double p) {
  GanSpec spec = tiny_dcgan(false);
  spec.augment.pipeline = augment::AugmentPipeline::kAda;
  spec.augment.ada = augment::ada_preset("bgc");
  spec.augment.initial_p = p;
  spec.terms.push_back(gan::make_r1_term(1.f));
  return spec;
}

TEST(AugmentReplicas, AdaPipelineTwoReplicasEqualOneAfterOneStep) {
  GanSpec spec = ada_spec(0.6);
  TrainedRun one = train(spec, 1, 1);
  TrainedRun two = train(spec, 2, 1);
  const double g = max_relative_difference(two.generator, one.generator);
  const double d = max_relative_difference(two.discriminator, one.discriminator);
  std::printf("[ measured ] ADA pipeline, 1 step, 2 replicas vs 1: G %.3g D %.3g\n", g, d);
  EXPECT_LT(g, kOneStepTolerance);
  EXPECT_LT(d, kOneStepTolerance);
  GanSpec plain = spec;
  plain.augment.initial_p = 0.0;
  TrainedRun off = train(plain, 1, 1);
  EXPECT_GT(max_relative_difference(off.discriminator, one.discriminator), 1e-3) << "the pipeline changed nothing";
}

TEST(AugmentReplicas, AdaPipelineTwoReplicasFollowOneDeviceFor10Steps) {
  GanSpec spec = ada_spec(0.8);
  TrainedRun one = train(spec, 1, 10);
  TrainedRun two = train(spec, 2, 10);
  const double g = max_relative_difference(two.generator, one.generator);
  const double d = max_relative_difference(two.discriminator, one.discriminator);
  std::printf("[ measured ] ADA pipeline, 10 steps, 2 replicas vs 1: G %.3g D %.3g\n", g, d);
  EXPECT_LT(g, kTrajectoryTolerance);
  EXPECT_LT(d, kTrajectoryTolerance);
}

}  // namespace
}  // namespace gantry::gan
