// The phases of a global step (Note [phases]) for TF-GAN's schedules, the classic reuse of the
// last D update's fakes and the joint step.
#include <gtest/gtest.h>

#include "gan/step/phases.h"

namespace gantry::gan {
namespace {

TrainSchedule schedule(int d, int g, bool reuse_fake = true, bool joint = false) {
  TrainSchedule s;
  s.discriminator_steps = d;
  s.generator_steps = g;
  s.reuse_fake = reuse_fake;
  s.joint = joint;
  return s;
}

TEST(Phases, OneAndOneIsADPhaseThenAGPhaseOnItsFakes) {
  const std::vector<Phase> p = phases_for(schedule(1, 1), 2);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].networks.size(), 1u);
  EXPECT_EQ(p[0].networks[0], Network::Discriminator);
  EXPECT_FALSE(p[0].updates_generator());
  EXPECT_EQ(p[1].networks[0], Network::Generator);
  EXPECT_TRUE(p[1].updates_generator());
  EXPECT_EQ(p[1].first_substep, 1);
  EXPECT_EQ(p[1].first_batch, 0);
  EXPECT_TRUE(p[1].reuses_previous_fake);
  EXPECT_EQ(p[0].micro_batches, 2);
  EXPECT_EQ(p[1].micro_batches, 2);
  EXPECT_EQ(input_batches(p), 1);
}

TEST(Phases, SeveralDUpdatesReadABatchEachAndGReadsTheLast) {
  const std::vector<Phase> p = phases_for(schedule(3, 2, false), 1);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].updates, 3);
  EXPECT_EQ(p[0].batch_of(0), 0);
  EXPECT_EQ(p[0].batch_of(2), 2);
  EXPECT_EQ(p[1].updates, 2);
  EXPECT_EQ(p[1].first_substep, 3);
  EXPECT_EQ(p[1].batch_of(0), 2);
  EXPECT_EQ(p[1].batch_of(1), 2);
  EXPECT_FALSE(p[1].reuses_previous_fake);
  EXPECT_EQ(input_batches(p), 3);
  EXPECT_EQ(updates_of(p, Network::Discriminator), 3);
  EXPECT_EQ(updates_of(p, Network::Generator), 2);
}

TEST(Phases, GeneratorOnlyReadsTheFirstBatchAndReusesNothing) {
  const std::vector<Phase> p = phases_for(schedule(0, 2), 1);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].first_substep, 0);
  EXPECT_EQ(p[0].batch_of(1), 0);
  EXPECT_FALSE(p[0].reuses_previous_fake);
  EXPECT_EQ(input_batches(p), 1);
  EXPECT_EQ(updates_of(p, Network::Discriminator), 0);
}

TEST(Phases, TheJointStepIsOnePhaseOfBothNetworksDFirst) {
  const std::vector<Phase> p = phases_for(schedule(1, 1, true, true), 1);
  ASSERT_EQ(p.size(), 1u);
  ASSERT_EQ(p[0].networks.size(), 2u);
  EXPECT_EQ(p[0].networks[0], Network::Discriminator);
  EXPECT_EQ(p[0].networks[1], Network::Generator);
  EXPECT_EQ(updates_of(p, Network::Discriminator), 1);
  EXPECT_EQ(updates_of(p, Network::Generator), 1);
}

}  // namespace
}  // namespace gantry::gan
