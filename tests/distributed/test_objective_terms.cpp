// Objective terms (Note [objective terms]) and the stats reporter (Note [stats reporter]): a
// term added to a GanSpec is one more component of its network's loss, trains 1 and 2 replicas
// alike, and the statistics it reports reach the step's results reduced over every replica.
#include <gtest/gtest.h>

#include "gan/estimator/gan_estimator.h"
#include "gan/step/term_inputs.h"
#include "support/tiny_gan.h"

namespace gantry::gan {
namespace {

constexpr int64_t kBatch = 8;

// weight x D(real)^2 (ProGAN's drift penalty), reporting what it saw: the mean real logit, the
// examples it ran on (as a share: their count) and the mean global index of its examples.
class DriftTerm : public ObjectiveTerm {
 public:
  explicit DriftTerm(float weight) : weight_(weight) {}
  std::string name() const override { return "drift"; }
  Network network() const override { return Network::Discriminator; }
  std::vector<StatDeclaration> statistics() const override {
    return {{"test/real_logit", StatReduce::MeanOfElements},
            {"test/examples", StatReduce::SumOfShares},
            {"test/example_index", StatReduce::MeanOfElements}};
  }
  Tensor loss(TermInputs& in) const override {
    Tensor real = in.real_logits();
    in.report("test/real_logit", real);
    const int64_t n = in.shard().real.size(0);
    in.report("test/examples", ops::full(Shape{1}, static_cast<double>(n), real.device()));
    const auto first = static_cast<double>(in.shard().first_example);
    Tensor index = ops::arange(first, first + static_cast<double>(n), 1.0, real.device());
    in.report("test/example_index", index);
    return ops::mul(losses::reduce_examples(ops::square(real), in.loss_context()), weight_);
  }

 private:
  float weight_;
};

struct Recorded {
  std::vector<float> drift, total, adversarial, real_logit, examples, example_index;
  std::vector<float> state;
};

class Recorder : public Hook {
 public:
  explicit Recorder(Recorded& out) : out_(out) {}
  void after_step(GanEstimator&, const StepResults& r) override {
    out_.drift.push_back(r.discriminator_components.at("drift"));
    out_.total.push_back(r.discriminator_loss);
    out_.adversarial.push_back(r.discriminator_components.at("adversarial"));
    out_.real_logit.push_back(r.statistics.at("test/real_logit"));
    out_.examples.push_back(r.statistics.at("test/examples"));
    out_.example_index.push_back(r.statistics.at("test/example_index"));
  }

 private:
  Recorded& out_;
};

Recorded train_with_drift(int replicas, float weight, int steps = 3) {
  GanSpec spec = testing::tiny_dcgan(false);
  spec.terms.push_back(std::make_shared<DriftTerm>(weight));
  GanEstimator est(spec, testing::cpu_strategy(replicas), 11);
  Recorded out;
  est.train(testing::blobs(kBatch), steps, {std::make_shared<Recorder>(out)});
  out.state = testing::flat_gan_state(est);
  return out;
}

TEST(ObjectiveTerms, AnExtraTermIsAComponentOfItsNetworksLoss) {
  const Recorded r = train_with_drift(1, 0.5f);
  for (size_t s = 0; s < r.total.size(); ++s) {
    EXPECT_GT(r.drift[s], 0.f) << "step " << s;
    EXPECT_NEAR(r.total[s], r.adversarial[s] + r.drift[s], 1e-5f * (1 + std::abs(r.total[s]))) << "step " << s;
  }
}

TEST(ObjectiveTerms, AnExtraTermTrainsOneAndTwoReplicasAlike) {
  const Recorded one = train_with_drift(1, 0.5f), two = train_with_drift(2, 0.5f);
  EXPECT_LT(testing::max_relative_difference(one.state, two.state), 1e-4);
  for (size_t s = 0; s < one.drift.size(); ++s) {
    EXPECT_NEAR(one.drift[s], two.drift[s], 1e-5f * (1 + one.drift[s])) << "step " << s;
    EXPECT_NEAR(one.real_logit[s], two.real_logit[s], 1e-5f * (1 + std::abs(one.real_logit[s]))) << "step " << s;
  }
}

TEST(ObjectiveTerms, AZeroWeightTermLeavesTrainingBitIdentical) {
  GanSpec spec = testing::tiny_dcgan(false);
  GanEstimator est(spec, testing::cpu_strategy(2), 11);
  est.train(testing::blobs(kBatch), 3);
  EXPECT_EQ(testing::flat_gan_state(est), train_with_drift(2, 0.f).state);
}

TEST(StatsReporter, ReducesStatisticsOverReplicasOncePerStep) {
  for (int replicas : {1, 2}) {
    const Recorded r = train_with_drift(replicas, 0.5f, 2);
    for (size_t s = 0; s < r.examples.size(); ++s) {
      // a share summed over the replicas: every real example of the global batch, once
      EXPECT_EQ(r.examples[s], static_cast<float>(kBatch)) << replicas << " replica(s), step " << s;
      // a mean over the elements every replica reported: global indices 0 .. kBatch-1
      EXPECT_FLOAT_EQ(r.example_index[s], (kBatch - 1) / 2.f) << replicas << " replica(s), step " << s;
    }
  }
}

}  // namespace
}  // namespace gantry::gan
