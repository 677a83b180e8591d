// LeCam (Tseng et al. 2021) in training: the anchors move by the global batch's mean logits
// (Note [LeCam anchors]), so 1, 2 and 3 replicas (shards of 8, 4 + 4, 3 + 3 + 2) and a replica
// with an empty shard keep the same anchors and train alike; the penalty is a component of D's
// loss on every step and changes training; the anchors average from start_step on.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gan/objective/lecam_term.h"
#include "support/recorded_training.h"
#include "support/tiny_gan.h"

namespace gantry::gan {
namespace {

constexpr int64_t kBatch = 8;
constexpr int kSteps = 4;
constexpr double kReplicaTolerance = 1e-5;  // a few steps that differ only by summation order

GanSpec with_lecam(const LeCamSettings& settings) {
  GanSpec spec = testing::tiny_dcgan(false);
  spec.terms.push_back(make_lecam_term(settings));
  return spec;
}

float statistic(const StepResults& r, const std::string& name) {
  auto it = r.statistics.find(name);
  return it == r.statistics.end() ? std::nanf("") : it->second;
}

TEST(LeCamTraining, SameAnchorsAndTrainingOnOneTwoAndThreeReplicas) {
  const GanSpec spec = with_lecam(LeCamSettings{1.0, 0.5, 1});
  const testing::RecordedRun one = testing::train_recorded(spec, 1, kBatch, kSteps);
  for (int replicas : {2, 3}) {
    SCOPED_TRACE(std::to_string(replicas) + " replicas");
    const testing::RecordedRun run = testing::train_recorded(spec, replicas, kBatch, kSteps);
    EXPECT_LT(testing::max_relative_difference(run.state, one.state), kReplicaTolerance);
    ASSERT_EQ(run.steps.size(), one.steps.size());
    for (size_t s = 0; s < one.steps.size(); ++s) {
      for (const char* name : {"lecam/anchor_real", "lecam/anchor_fake"}) {
        const float want = statistic(one.steps[s], name);
        EXPECT_NEAR(statistic(run.steps[s], name), want, 1e-5f * (1 + std::abs(want))) << name << ", step " << s;
      }
      const float want = one.steps[s].discriminator_components.at("lecam_penalty");
      EXPECT_NE(want, 0.f) << "step " << s;
      EXPECT_NEAR(run.steps[s].discriminator_components.at("lecam_penalty"), want, 1e-5f * (1 + std::abs(want)));
    }
  }
  // The anchors start at the first batch's means and then average: real above fake, as D learns.
  EXPECT_GT(statistic(one.steps.back(), "lecam/anchor_real"), statistic(one.steps.back(), "lecam/anchor_fake"));
  // and the term changes training
  const testing::RecordedRun plain = testing::train_recorded(testing::tiny_dcgan(false), 1, kBatch, kSteps);
  EXPECT_GT(testing::max_relative_difference(one.state, plain.state), 1e-4);
}

// Batch 2 on 3 replicas: the third replica's shard is empty; it still joins the all-reduce of the
// means, and its anchors (the logged mean over the replicas that report) stay equal to the others'.
TEST(LeCamTraining, AReplicaWithAnEmptyShardKeepsTheSameAnchors) {
  const GanSpec spec = with_lecam(LeCamSettings{1.0, 0.5, 0});
  const testing::RecordedRun one = testing::train_recorded(spec, 1, 2, kSteps);
  const testing::RecordedRun three = testing::train_recorded(spec, 3, 2, kSteps);
  EXPECT_LT(testing::max_relative_difference(three.state, one.state), kReplicaTolerance);
  for (size_t s = 0; s < one.steps.size(); ++s) {
    const float want = statistic(one.steps[s], "lecam/anchor_fake");
    EXPECT_NEAR(statistic(three.steps[s], "lecam/anchor_fake"), want, 1e-5f * (1 + std::abs(want))) << "step " << s;
  }
}

TEST(LeCamTraining, AnchorsFollowTheBatchMeansBeforeStartStep) {
  // Before start_step the decay is 0: the anchors are each update's means, so they change from
  // step to step. From it on they average: the first update of a run with decay 0.99 from step 0
  // sees the same logits (same start) and moves the zero anchors 1 % of the way to the means.
  const testing::RecordedRun follow = testing::train_recorded(with_lecam(LeCamSettings{1.0, 0.99, 100}), 1, kBatch, kSteps);
  const testing::RecordedRun slow = testing::train_recorded(with_lecam(LeCamSettings{1.0, 0.99, 0}), 1, kBatch, kSteps);
  for (const char* name : {"lecam/anchor_real", "lecam/anchor_fake"}) {
    SCOPED_TRACE(name);
    const float mean = statistic(follow.steps[0], name);
    EXPECT_NE(mean, 0.f);
    EXPECT_NE(statistic(follow.steps[1], name), mean);
    EXPECT_NEAR(statistic(slow.steps[0], name), 0.01f * mean, 1e-6f * (1 + std::abs(mean)));
  }
}

}  // namespace
}  // namespace gantry::gan
