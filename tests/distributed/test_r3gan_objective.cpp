// R3GAN's objective pieces (Huang et al. 2024) in training: the relativistic pairing loss and the
// R2 term train 1 and 2 CPU replicas alike (each a sum over examples over the global batch, the
// pairs and penalties keyed by global example index), R2 is a component of D's loss on its lazy
// steps, and its critic sees the fakes augmented exactly as D's fake batch was.
#include <gtest/gtest.h>

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "gan/estimator/gan_estimator.h"
#include "gan/objective/adversarial_term.h"
#include "gan/objective/gradient_penalty_terms.h"
#include "gan/step/term_inputs.h"
#include "losses/adversarial_loss.h"
#include "support/tiny_gan.h"

namespace gantry::gan {
namespace {

constexpr int64_t kBatch = 8;
// As tests/distributed/test_objective_terms.cpp: a few steps differ only by summation order.
constexpr double kReplicaTolerance = 1e-5;

struct TrainedRun {
  std::vector<float> state, r2, total, adversarial;
};

class Recorder : public Hook {
 public:
  explicit Recorder(TrainedRun& out) : out_(out) {}
  void after_step(GanEstimator&, const StepResults& r) override {
    auto it = r.discriminator_components.find("r2_penalty");
    out_.r2.push_back(it == r.discriminator_components.end() ? -1.f : it->second);
    out_.total.push_back(r.discriminator_loss);
    out_.adversarial.push_back(r.discriminator_components.at("adversarial"));
  }

 private:
  TrainedRun& out_;
};

TrainedRun train(GanSpec spec, int replicas, int steps = 4) {
  GanEstimator est(spec, testing::cpu_strategy(replicas), 13);
  TrainedRun out;
  est.train(testing::blobs(kBatch), steps, {std::make_shared<Recorder>(out)});
  out.state = testing::flat_gan_state(est);
  return out;
}

GanSpec with_pairing_loss() {
  GanSpec spec = testing::tiny_dcgan(false);
  spec.terms = gan::make_adversarial_terms(losses::make_relativistic_pairing());
  return spec;
}

TEST(R3ganObjective, RelativisticPairingTrainsOneAndTwoReplicasAlike) {
  const TrainedRun one = train(with_pairing_loss(), 1), two = train(with_pairing_loss(), 2);
  EXPECT_LT(testing::max_relative_difference(one.state, two.state), kReplicaTolerance);
  for (size_t s = 0; s < one.total.size(); ++s)
    EXPECT_NEAR(one.total[s], two.total[s], 1e-5f * (1 + std::abs(one.total[s]))) << "step " << s;
  // the loss is really another one: the default loss lands elsewhere
  const TrainedRun other = train(testing::tiny_dcgan(false), 1);
  EXPECT_GT(testing::max_relative_difference(one.state, other.state), 1e-3);
}

TEST(R3ganObjective, R2IsAComponentOfDsLossOnItsStepsOnOneAndTwoReplicas) {
  auto spec_with_r2 = [] {
    GanSpec spec = with_pairing_loss();
    spec.terms.push_back(make_r2_term(5.f, 2));  // active on steps 0 and 2
    return spec;
  };
  const TrainedRun one = train(spec_with_r2(), 1), two = train(spec_with_r2(), 2);
  EXPECT_LT(testing::max_relative_difference(one.state, two.state), kReplicaTolerance);
  ASSERT_EQ(one.r2.size(), 4u);
  for (const TrainedRun* run : {&one, &two}) {
    for (size_t s : {0u, 2u}) {
      EXPECT_GT(run->r2[s], 0.f) << "step " << s;
      EXPECT_NEAR(run->total[s], run->adversarial[s] + run->r2[s], 1e-5f * (1 + std::abs(run->total[s])))
          << "step " << s;
    }
    for (size_t s : {1u, 3u}) EXPECT_FLOAT_EQ(run->total[s], run->adversarial[s]) << "lazy step " << s;
  }
  for (size_t s : {0u, 2u}) EXPECT_NEAR(one.r2[s], two.r2[s], 1e-5f * (1 + one.r2[s])) << "step " << s;
  // and it changes training
  EXPECT_GT(testing::max_relative_difference(one.state, train(with_pairing_loss(), 1).state), 1e-4);
}

// Reports, in D's updates, how far the fake critic's logits at the un-augmented fakes are from
// D's own fake logits (zero: the same augmentation, labels and network) and how far the real
// critic's are (not zero with augmentation on: the reals' stream augments differently).
class CriticProbe : public ObjectiveTerm {
 public:
  std::string name() const override { return "critic_probe"; }
  Network network() const override { return Network::Discriminator; }
  bool has_loss() const override { return false; }
  std::vector<StatDeclaration> statistics() const override {
    return {{"test/fake_critic_gap", StatReduce::MeanOfElements}, {"test/real_critic_gap", StatReduce::MeanOfElements}};
  }
  Tensor loss(TermInputs& in) const override {
    NoGradGuard no_grad;
    Tensor seen = in.fake_logits();
    in.report("test/fake_critic_gap", ops::abs(ops::sub(in.fake_critic()(in.fake_images()), seen)));
    in.report("test/real_critic_gap", ops::abs(ops::sub(in.critic()(in.fake_images()), seen)));
    return {};
  }
};

TEST(R3ganObjective, R2sCriticAugmentsTheFakesAsDSawThem) {
  GanSpec spec = with_pairing_loss();
  augment::AugmentPolicy& policy = spec.augment.policy;
  policy.brightness = policy.saturation = policy.contrast = policy.translation = policy.cutout = true;
  spec.augment.initial_p = 1.0;
  spec.terms.push_back(std::make_shared<CriticProbe>());
  spec.terms.push_back(make_r2_term(1.f));
  struct Gaps : Hook {
    void after_step(GanEstimator&, const StepResults& r) override {
      fake.push_back(r.statistics.at("test/fake_critic_gap"));
      real.push_back(r.statistics.at("test/real_critic_gap"));
    }
    std::vector<float> fake, real;
  };
  for (int replicas : {1, 2}) {
    auto gaps = std::make_shared<Gaps>();
    GanEstimator est(spec, testing::cpu_strategy(replicas), 13);
    est.train(testing::blobs(kBatch), 2, {gaps});
    ASSERT_EQ(gaps->fake.size(), 2u);
    for (size_t s = 0; s < 2; ++s) {
      EXPECT_LT(gaps->fake[s], 1e-6f) << replicas << " replica(s), step " << s;
      EXPECT_GT(gaps->real[s], 1e-4f) << replicas << " replica(s), step " << s;
    }
  }
}

}  // namespace
}  // namespace gantry::gan
