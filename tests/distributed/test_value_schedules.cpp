// Hyperparameters on schedules over the images seen (Note [value schedules]): both optimizers'
// lr and beta2, R1's gamma, R2's gamma, the EMA half-life and the augmentation probability at once
// train 1 and 2 CPU replicas alike (every replica takes the same value from the step), each value
// reaches what it schedules, and the logged values are the schedules' (Note [logged schedules]).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gan/estimator/gan_estimator.h"
#include "gan/objective/adversarial_term.h"
#include "gan/objective/gradient_penalty_terms.h"
#include "losses/adversarial_loss.h"
#include "losses/penalty.h"
#include "nn/adam.h"
#include "support/tiny_gan.h"

namespace gantry::gan {
namespace {

constexpr int64_t kBatch = 8;
constexpr int kSteps = 4;
// As tests/distributed/test_r3gan_objective.cpp: a few steps differ only by summation order.
constexpr double kReplicaTolerance = 1e-5;

// from -> to over the 4 steps' 32 images: the steps take 4 different values
nn::ValueSchedule cosine(double from, double to) {
  nn::Ramp r;
  r.from = from;
  r.to = to;
  r.over_kimg = 0.032;
  return nn::ValueSchedule(r);
}

// R3GAN's objective on the tiny DCGAN (no batch norm, so R1 and R2 differentiate it twice), with
// every schedule when `scheduled`, else constants at the schedules' first values.
GanSpec r3gan_spec(bool scheduled) {
  auto value = [scheduled](double from, double to) { return scheduled ? cosine(from, to) : nn::ValueSchedule(from); };
  GanSpec spec = testing::tiny_dcgan(false);
  spec.terms = gan::make_adversarial_terms(losses::make_relativistic_pairing());
  spec.terms.push_back(gan::make_r1_term(value(0.5, 0.05)));
  spec.terms.push_back(make_r2_term(value(0.5, 0.05)));
  spec.augment.policy.translation = spec.augment.policy.brightness = true;
  spec.augment.initial_p = 0.2;
  spec.generator_ema.enabled = true;
  spec.generator_ema.half_life_kimg = value(0, 0.016);
  if (scheduled) {
    spec.augment.scheduled_p = cosine(0.2, 0.8);
    for (OptimizerSchedules* s : {&spec.generator_optimizer_schedules, &spec.discriminator_optimizer_schedules}) {
      s->lr = cosine(2e-3, 5e-4);
      s->beta2 = cosine(0.9, 0.99);
    }
    spec.logged_schedules = {{"optimizers.generator.lr", cosine(2e-3, 5e-4)}, {"augment.p", cosine(0.2, 0.8)}};
  } else {
    spec.generator_optimizer_schedules.lr = spec.discriminator_optimizer_schedules.lr = nn::ValueSchedule(2e-3);
    spec.generator_optimizer_schedules.beta2 = spec.discriminator_optimizer_schedules.beta2 = nn::ValueSchedule(0.9);
  }
  return spec;
}

struct TrainedRun {
  std::vector<float> state;  // G, D, then the EMA generator
  std::vector<std::map<std::string, float>> statistics;  // per step
  std::vector<double> augment_p;
  double generator_lr = 0, generator_beta2 = 0, discriminator_beta2 = 0;
};

TrainedRun train(bool scheduled, int replicas) {
  struct Recorder : Hook {
    explicit Recorder(TrainedRun& out) : out_(out) {}
    void after_step(GanEstimator&, const StepResults& r) override {
      out_.statistics.push_back(r.statistics);
      out_.augment_p.push_back(r.augment_p);
    }
    TrainedRun& out_;
  };
  GanEstimator est(r3gan_spec(scheduled), testing::cpu_strategy(replicas), 13);
  TrainedRun out;
  est.train(testing::blobs(kBatch), kSteps, {std::make_shared<Recorder>(out)});
  out.state = testing::flat_gan_state(est);
  const std::vector<float> ema = testing::flat_state(*est.generator_ema());
  out.state.insert(out.state.end(), ema.begin(), ema.end());
  out.generator_lr = est.replica(0).generator.optimizer->lr();
  out.generator_beta2 = dynamic_cast<nn::Adam&>(*est.replica(0).generator.optimizer).options().beta2;
  out.discriminator_beta2 = dynamic_cast<nn::Adam&>(*est.replica(0).discriminator.optimizer).options().beta2;
  return out;
}

TEST(ValueSchedules, EveryScheduleAtOnceTrainsOneAndTwoReplicasAlike) {
  const TrainedRun one = train(true, 1), two = train(true, 2);
  EXPECT_LT(testing::max_relative_difference(one.state, two.state), kReplicaTolerance);
  // the last step's values reached the optimizers, on every replica count
  const int64_t last = (kSteps - 1) * kBatch;
  for (const TrainedRun* run : {&one, &two}) {
    EXPECT_EQ(run->generator_lr, cosine(2e-3, 5e-4).at(last));
    EXPECT_EQ(run->generator_beta2, cosine(0.9, 0.99).at(last));
    EXPECT_EQ(run->discriminator_beta2, cosine(0.9, 0.99).at(last));
  }
  // the logged values and augment p are the schedules' at each step's images
  ASSERT_EQ(one.statistics.size(), static_cast<size_t>(kSteps));
  for (int s = 0; s < kSteps; ++s) {
    const int64_t images = s * kBatch;
    for (const TrainedRun* run : {&one, &two}) {
      EXPECT_EQ(run->statistics[s].at("schedule/optimizers.generator.lr"),
                static_cast<float>(cosine(2e-3, 5e-4).at(images)))
          << "step " << s;
      EXPECT_EQ(run->statistics[s].at("schedule/augment.p"), static_cast<float>(cosine(0.2, 0.8).at(images)));
      EXPECT_EQ(run->augment_p[s], cosine(0.2, 0.8).at(images));
    }
  }
  EXPECT_NE(one.statistics[1].at("schedule/optimizers.generator.lr"),
            one.statistics[2].at("schedule/optimizers.generator.lr"));
  // and the schedules change training: constants at their first values land elsewhere
  const TrainedRun constant = train(false, 1);
  EXPECT_GT(testing::max_relative_difference(one.state, constant.state), 1e-3);
  EXPECT_TRUE(constant.statistics.back().empty());  // nothing logged without logged schedules
}

}  // namespace
}  // namespace gantry::gan
