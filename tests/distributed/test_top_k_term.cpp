// Top-k generator updates (Sinha et al. 2020) in training: the k fakes are chosen from the global
// batch (Note [top-k over the global batch]), so 1, 2 and 3 replicas (shards of 8, 4 + 4, 3 + 3 + 2)
// train alike; the term replaces G's adversarial component, k anneals with the step, keeping
// every fake is the plain objective, and keeping fewer changes training.
#include <gtest/gtest.h>

#include <cmath>

#include "gan/estimator/gan_estimator.h"
#include "gan/objective/top_k_term.h"
#include "losses/adversarial_loss.h"
#include "support/recorded_training.h"
#include "support/tiny_gan.h"

namespace gantry::gan {
namespace {

constexpr int64_t kBatch = 8;
constexpr int kSteps = 4;
// As tests/distributed/test_objective_terms.cpp: a few steps differ only by summation order.
constexpr double kReplicaTolerance = 1e-5;

GanSpec with_top_k(const TopKSettings& settings) {
  GanSpec spec = testing::tiny_dcgan(false);
  spec.terms.push_back(make_top_k_term(settings, losses::make_non_saturating()));  // tiny_dcgan's loss
  return spec;
}

TEST(TopKTraining, KeepsTheSameFakesOnOneTwoAndThreeReplicas) {
  // k = max(floor(0.5^step * 8), floor(0.25 * 8)): 8, 4, 2, 2
  const GanSpec spec = with_top_k(TopKSettings{0.5, 0.25, 1});
  const testing::RecordedRun one = testing::train_recorded(spec, 1, kBatch, kSteps);
  const float expected_k[kSteps] = {8, 4, 2, 2};
  for (int replicas : {1, 2, 3}) {
    SCOPED_TRACE(std::to_string(replicas) + " replica(s)");
    const testing::RecordedRun run = replicas == 1 ? one : testing::train_recorded(spec, replicas, kBatch, kSteps);
    EXPECT_LT(testing::max_relative_difference(one.state, run.state), kReplicaTolerance);
    ASSERT_EQ(run.steps.size(), static_cast<size_t>(kSteps));
    for (int s = 0; s < kSteps; ++s) {
      const StepResults& r = run.steps[static_cast<size_t>(s)];
      EXPECT_EQ(r.generator_components.count("adversarial"), 0u) << "step " << s;
      ASSERT_EQ(r.generator_components.count("top_k_adversarial"), 1u) << "step " << s;
      const float top_k = r.generator_components.at("top_k_adversarial");
      EXPECT_GT(top_k, 0.f) << "step " << s;
      EXPECT_FLOAT_EQ(r.generator_loss, top_k) << "step " << s;
      EXPECT_NEAR(top_k, one.steps[static_cast<size_t>(s)].generator_loss, 1e-5f * (1 + top_k)) << "step " << s;
      EXPECT_FLOAT_EQ(r.statistics.at("top_k/k"), expected_k[s]) << "step " << s;
    }
  }
  // keeping fewer than all changes training; keeping all is the plain objective
  const testing::RecordedRun plain = testing::train_recorded(testing::tiny_dcgan(false), 1, kBatch, kSteps);
  EXPECT_GT(testing::max_relative_difference(one.state, plain.state), 1e-4);
  const testing::RecordedRun all = testing::train_recorded(with_top_k(TopKSettings{1.0, 1.0, 1}), 1, kBatch, kSteps);
  EXPECT_LT(testing::max_relative_difference(all.state, plain.state), 1e-6);
  for (int s = 0; s < kSteps; ++s)
    EXPECT_FLOAT_EQ(all.steps[static_cast<size_t>(s)].generator_loss, plain.steps[static_cast<size_t>(s)].generator_loss);
}

// k holds for an epoch of steps_per_epoch global steps, on every replica alike.
TEST(TopKTraining, LongerEpochsKeepKUntilTheEpochEnds) {
  const GanSpec spec = with_top_k(TopKSettings{0.5, 0.5, 2});  // k: 8, 8, 4, 4
  const testing::RecordedRun one = testing::train_recorded(spec, 1, kBatch, kSteps);
  const testing::RecordedRun two = testing::train_recorded(spec, 2, kBatch, kSteps);
  EXPECT_LT(testing::max_relative_difference(one.state, two.state), kReplicaTolerance);
  const float expected_k[kSteps] = {8, 8, 4, 4};
  for (int s = 0; s < kSteps; ++s) EXPECT_FLOAT_EQ(two.steps[static_cast<size_t>(s)].statistics.at("top_k/k"), expected_k[s]);
}

}  // namespace
}  // namespace gantry::gan
