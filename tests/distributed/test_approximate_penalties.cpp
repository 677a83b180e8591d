// R1 and R2 in their finite-difference form (Note [approximate R1 and R2]) in training: no backward
// records a graph (the exact form's double backward does), so a D with training-mode batch norm,
// which has no double backward, trains with them; 1 and 2 replicas (synchronized batch norm,
// augmentation on) train alike, lazily; and under augmentation the estimate is of the exact
// penalty's size, so the perturbed batch is augmented as D's own batch was.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/autograd/engine.h"
#include "gan/estimator/gan_estimator.h"
#include "gan/objective/adversarial_term.h"
#include "gan/objective/gradient_penalty_terms.h"
#include "losses/adversarial_loss.h"
#include "support/tiny_gan.h"

namespace gantry::gan {
namespace {

constexpr int64_t kBatch = 8;
// 1 and 2 replicas differ by summation order only, ~1e-7 relative in D's outputs; the penalty's
// gradient is made of a difference of two outputs that is sigma ||g|| ~ 1e-3 of them here, so the
// rounding reaches its gradient ~1e4 times larger (the exact forms' tests allow 1e-5), and Adam
// passes it on to the weights: measured 3e-4 after 4 steps, with batch norm and augmentation.
constexpr double kReplicaTolerance = 2e-3;

struct TrainedRun {
  std::vector<float> r1, r2, total, adversarial;  // a lazy component holds its last value
  std::vector<float> initial_state, state;
};

class Recorder : public Hook {
 public:
  explicit Recorder(TrainedRun& out) : out_(out) {}
  void after_step(GanEstimator&, const StepResults& r) override {
    auto component = [&](const char* name) {
      auto it = r.discriminator_components.find(name);
      return it == r.discriminator_components.end() ? -1.f : it->second;
    };
    out_.r1.push_back(component("r1_penalty"));
    out_.r2.push_back(component("r2_penalty"));
    out_.total.push_back(r.discriminator_loss);
    out_.adversarial.push_back(component("adversarial"));
  }

 private:
  TrainedRun& out_;
};

// RpGAN with R1 and R2, approximate when `sigma` > 0.
GanSpec rpgan(bool batch_norm, float gamma, int64_t r1_interval, float sigma) {
  GanSpec spec = testing::tiny_dcgan(batch_norm);
  spec.terms = make_adversarial_terms(losses::make_relativistic_pairing());
  std::optional<ApproximatePenalty> approximate;
  if (sigma > 0.f) approximate = ApproximatePenalty{sigma};
  spec.terms.push_back(make_r1_term(gamma, r1_interval, approximate));
  spec.terms.push_back(make_r2_term(gamma, 1, approximate));
  return spec;
}

void augment_everything(GanSpec& spec) {
  augment::AugmentPolicy& policy = spec.augment.policy;
  policy.brightness = policy.saturation = policy.contrast = policy.translation = policy.cutout = true;
  spec.augment.initial_p = 1.0;
}

TrainedRun train(const GanSpec& spec, int replicas, int64_t batch, int steps) {
  GanEstimator est(spec, testing::cpu_strategy(replicas), 13);
  TrainedRun out;
  out.initial_state = testing::flat_gan_state(est);
  est.train(testing::blobs(batch), steps, {std::make_shared<Recorder>(out)});
  out.state = testing::flat_gan_state(est);
  return out;
}

TEST(ApproximatePenalties, ABatchNormDiscriminatorTrainsWithoutADoubleBackward) {
  const uint64_t before = autograd::graph_recording_backwards();
  const TrainedRun run = train(rpgan(true, 1.f, 1, 0.01f), 1, kBatch, 8);
  EXPECT_EQ(autograd::graph_recording_backwards(), before) << "a backward recorded its graph";
  ASSERT_EQ(run.total.size(), 8u);
  for (size_t s = 0; s < run.total.size(); ++s) {
    EXPECT_TRUE(std::isfinite(run.total[s])) << "step " << s;
    EXPECT_GT(run.r1[s], 0.f) << "step " << s;
    EXPECT_GT(run.r2[s], 0.f) << "step " << s;
    EXPECT_TRUE(std::isfinite(run.r1[s]) && std::isfinite(run.r2[s])) << "step " << s;
  }
  EXPECT_GT(std::abs(run.total.back() - run.total.front()), 1e-3f);  // the loss moves
  EXPECT_GT(testing::max_relative_difference(run.state, run.initial_state), 1e-3);
  for (float v : run.state) ASSERT_TRUE(std::isfinite(v));
  // and the penalties take part: training without them lands elsewhere
  GanSpec plain = testing::tiny_dcgan(true);
  plain.terms = make_adversarial_terms(losses::make_relativistic_pairing());
  EXPECT_GT(testing::max_relative_difference(run.state, train(plain, 1, kBatch, 8).state), 1e-4);
}

// The control: the counter does see the exact form's double backward, and the exact form refuses
// training-mode batch norm.
TEST(ApproximatePenalties, TheExactFormRecordsAGraphAndRefusesBatchNorm) {
  const uint64_t before = autograd::graph_recording_backwards();
  train(rpgan(false, 1.f, 1, 0.f), 1, kBatch, 2);
  EXPECT_GE(autograd::graph_recording_backwards(), before + 4);  // R1 and R2 on each of 2 steps
  try {
    train(rpgan(true, 1.f, 1, 0.f), 1, kBatch, 1);
    FAIL() << "the exact R1 differentiated training-mode batch norm twice";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("double backward is not supported"), std::string::npos) << e.what();
  }
}

TEST(ApproximatePenalties, OneAndTwoReplicasTrainAlikeLazilyUnderAugmentation) {
  GanSpec spec = rpgan(true, 1.f, 2, 0.01f);  // R1 on steps 0 and 2
  spec.sync_batch_norm = true;                // 1 and 2 replicas normalise over the same examples
  augment_everything(spec);
  const TrainedRun one = train(spec, 1, kBatch, 4), two = train(spec, 2, kBatch, 4);
  EXPECT_LT(testing::max_relative_difference(one.state, two.state), kReplicaTolerance);
  for (size_t s = 0; s < 4; ++s) {
    // the same draws on both: the penalties agree to rounding
    EXPECT_NEAR(one.r1[s], two.r1[s], 1e-5f * (1 + std::abs(one.r1[s]))) << "step " << s;
    EXPECT_NEAR(one.r2[s], two.r2[s], 1e-5f * (1 + std::abs(one.r2[s]))) << "step " << s;
    EXPECT_GT(one.r2[s], 0.f) << "step " << s;
    EXPECT_GT(one.r1[s], 0.f) << "step " << s;
    const float with_r1 = one.adversarial[s] + one.r2[s] + (s % 2 == 0 ? one.r1[s] : 0.f);
    EXPECT_NEAR(one.total[s], with_r1, 1e-5f * (1 + std::abs(one.total[s]))) << "step " << s;
  }
  EXPECT_EQ(one.r1[1], one.r1[0]);  // held on the lazy step
  EXPECT_NE(one.r1[2], one.r1[0]);
  // the tolerance is far below what the penalties change
  GanSpec plain = testing::tiny_dcgan(true);
  plain.terms = make_adversarial_terms(losses::make_relativistic_pairing());
  plain.sync_batch_norm = true;
  augment_everything(plain);
  EXPECT_GT(testing::max_relative_difference(one.state, train(plain, 1, kBatch, 4).state), 10 * kReplicaTolerance);
}

// On the first step both runs see the same D and batch: the one-draw estimate over 32 examples has a
// relative standard deviation of about sqrt(2 / 32) = 0.25 around the exact value. Were the
// perturbed batch augmented with another draw than D's own forward (or the difference taken
// against another forward), D(augment'(x + sigma eps)) - D(augment(x)) would be O(1), not
// O(sigma), and the estimate ~1e4 times too large.
TEST(ApproximatePenalties, UnderAugmentationTheEstimateIsOfTheExactPenaltysSize) {
  constexpr int64_t kLargeBatch = 32;
  GanSpec exact = rpgan(false, 1.f, 1, 0.f), approximate = rpgan(false, 1.f, 1, 0.01f);
  augment_everything(exact);
  augment_everything(approximate);
  const TrainedRun e = train(exact, 1, kLargeBatch, 1), a = train(approximate, 1, kLargeBatch, 1);
  ASSERT_GT(e.r1[0], 0.f);
  ASSERT_GT(e.r2[0], 0.f);
  EXPECT_GT(a.r1[0] / e.r1[0], 0.5f) << a.r1[0] << " vs " << e.r1[0];
  EXPECT_LT(a.r1[0] / e.r1[0], 2.f) << a.r1[0] << " vs " << e.r1[0];
  EXPECT_GT(a.r2[0] / e.r2[0], 0.5f) << a.r2[0] << " vs " << e.r2[0];
  EXPECT_LT(a.r2[0] / e.r2[0], 2.f) << a.r2[0] << " vs " << e.r2[0];
}

}  // namespace
}  // namespace gantry::gan
