// A lazy regulariser (R1 every k steps) is computed on some steps only; the step's results keep
// its last computed value on the others (Note [stats reporter]), so logs and
// summaries that sample every 10th step still show it. On 1 and 2 replicas alike.
#include <gtest/gtest.h>

#include "gan/estimator/gan_estimator.h"
#include "gan/objective/gradient_penalty_terms.h"
#include "support/tiny_gan.h"

namespace gantry::gan {
namespace {

class R1Recorder : public Hook {
 public:
  void after_step(GanEstimator&, const StepResults& r) override {
    r1.push_back(r.discriminator_components.at("r1_penalty"));
    total.push_back(r.discriminator_loss);
    adversarial.push_back(r.discriminator_components.at("adversarial"));
  }
  std::vector<float> r1, total, adversarial;
};

void expect_held_between_lazy_steps(int replicas) {
  GanSpec spec = testing::tiny_dcgan(false);
  spec.terms.push_back(gan::make_r1_term(10.f, 3));  // computed on steps 0, 3, 6
  GanEstimator est(spec, testing::cpu_strategy(replicas), 5);
  auto rec = std::make_shared<R1Recorder>();
  est.train(testing::blobs(8), 8, {rec});
  ASSERT_EQ(rec->r1.size(), 8u);
  for (int64_t step : {0, 3, 6}) {
    EXPECT_GT(rec->r1[step], 0.f) << replicas << " replica(s), step " << step;
    // on its steps the penalty is part of the total
    const float total = rec->total[step];
    EXPECT_NEAR(total, rec->adversarial[step] + rec->r1[step], 1e-5f * (1 + total)) << "step " << step;
    for (int64_t later : {step + 1, step + 2}) {
      if (later >= 8) continue;
      EXPECT_EQ(rec->r1[later], rec->r1[step]) << replicas << " replica(s): step " << later << " holds step " << step;
      // between them it is not: the total is the adversarial loss alone
      EXPECT_FLOAT_EQ(rec->total[later], rec->adversarial[later]) << "step " << later;
    }
  }
  EXPECT_NE(rec->r1[3], rec->r1[0]) << "a lazy step reports its own value";
}

TEST(LazyLossComponents, KeepTheirLastComputedValueOnOneReplica) { expect_held_between_lazy_steps(1); }

TEST(LazyLossComponents, KeepTheirLastComputedValueOnTwoReplicas) { expect_held_between_lazy_steps(2); }

}  // namespace
}  // namespace gantry::gan
