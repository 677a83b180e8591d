// Consistency regularisation (Zhao et al. 2021) in training: the bCR and zCR terms train 1 and 2
// CPU replicas alike (their transforms and latent perturbations keyed by global example index,
// sums over examples over the global batch), are components of their networks' losses on every
// step, and change training; zCR's extra G forwards move no w_avg.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "gan/estimator/gan_estimator.h"
#include "gan/objective/bcr_term.h"
#include "gan/objective/zcr_term.h"
#include "support/recorded_training.h"
#include "support/tiny_gan.h"
#include "support/tiny_stylegan2.h"

namespace gantry::gan {
namespace {

constexpr int64_t kBatch = 8;
// As tests/distributed/test_objective_terms.cpp: a few steps differ only by summation order.
constexpr double kReplicaTolerance = 1e-5;

using testing::RecordedRun;

RecordedRun train(const GanSpec& spec, int replicas) { return testing::train_recorded(spec, replicas, kBatch, 4); }

float component(const std::map<std::string, float>& components, const std::string& name) {
  auto it = components.find(name);
  return it == components.end() ? -1.f : it->second;
}

// The component `name` of `network`'s loss is there on every step, not zero, adds up with the
// adversarial loss to the total, and agrees between 1 and 2 replicas, as does the trained state.
void expect_component_on_one_and_two_replicas(const GanSpec& spec, Network network, const std::string& name) {
  const RecordedRun one = train(spec, 1), two = train(spec, 2);
  EXPECT_LT(testing::max_relative_difference(one.state, two.state), kReplicaTolerance);
  ASSERT_EQ(one.steps.size(), 4u);
  ASSERT_EQ(two.steps.size(), 4u);
  const bool d = network == Network::Discriminator;
  for (size_t s = 0; s < one.steps.size(); ++s) {
    for (const RecordedRun* run : {&one, &two}) {
      const StepResults& r = run->steps[s];
      const auto& components = d ? r.discriminator_components : r.generator_components;
      const float total = d ? r.discriminator_loss : r.generator_loss;
      ASSERT_TRUE(components.count(name)) << name << " missing, step " << s;
      EXPECT_NE(components.at(name), 0.f) << "step " << s;
      EXPECT_NEAR(total, components.at("adversarial") + components.at(name), 1e-5f * (1 + std::abs(total)))
          << "step " << s;
    }
    const auto& a = d ? one.steps[s].discriminator_components : one.steps[s].generator_components;
    const auto& b = d ? two.steps[s].discriminator_components : two.steps[s].generator_components;
    EXPECT_NEAR(component(a, name), component(b, name), 1e-5f * (1 + std::abs(component(a, name)))) << "step " << s;
  }
}

augment::AugmentPolicy translation_and_cutout() {
  augment::AugmentPolicy p;
  p.translation = p.cutout = true;
  return p;
}

TEST(ConsistencyTerms, BcrIsAComponentOfDsLossOnOneAndTwoReplicas) {
  GanSpec spec = testing::tiny_dcgan(false);
  spec.terms.push_back(make_bcr_term(10.f, 5.f, translation_and_cutout()));
  expect_component_on_one_and_two_replicas(spec, Network::Discriminator, "bcr_penalty");
  // and it changes training
  EXPECT_GT(testing::max_relative_difference(train(spec, 1).state, train(testing::tiny_dcgan(false), 1).state), 1e-4);
}

TEST(ConsistencyTerms, BcrOnTopOfTrainingAugmentationOnOneAndTwoReplicas) {
  GanSpec spec = testing::tiny_dcgan(false);
  augment::AugmentPolicy& policy = spec.augment.policy;
  policy.brightness = policy.saturation = policy.contrast = policy.translation = true;
  spec.augment.initial_p = 1.0;
  spec.terms.push_back(make_bcr_term(10.f, 10.f, translation_and_cutout()));
  expect_component_on_one_and_two_replicas(spec, Network::Discriminator, "bcr_penalty");
}

TEST(ConsistencyTerms, ZcrIsAComponentOfBothLossesOnOneAndTwoReplicas) {
  GanSpec spec = testing::tiny_dcgan(false);
  spec.terms.push_back(make_zcr_term(5.f, 0.05f));
  spec.terms.push_back(make_zcr_generator_term(0.5f, 0.05f));
  expect_component_on_one_and_two_replicas(spec, Network::Discriminator, "zcr_penalty");
  expect_component_on_one_and_two_replicas(spec, Network::Generator, "zcr_generator");
  for (const StepResults& r : train(spec, 1).steps) EXPECT_LT(r.generator_components.at("zcr_generator"), 0.f);
  EXPECT_GT(testing::max_relative_difference(train(spec, 1).state, train(testing::tiny_dcgan(false), 1).state), 1e-4);
}

// zCR's extra G forwards (in D's and G's updates) move no w_avg (Note [w average] in
// gan/networks/style_generator.h): with weights 0 a style generator trains exactly as without the terms,
// w_avg and all.
TEST(ConsistencyTerms, ZcrsExtraGeneratorForwardsMoveNoWAverage) {
  GanSpec spec = testing::tiny_stylegan2();
  const RecordedRun plain = train(spec, 1);
  spec.terms.push_back(make_zcr_term(0.f, 0.05f));
  spec.terms.push_back(make_zcr_generator_term(0.f, 0.05f));
  const RecordedRun with_zcr = train(spec, 1);
  ASSERT_TRUE(with_zcr.steps.back().generator_components.count("zcr_generator"));
  EXPECT_EQ(testing::max_relative_difference(with_zcr.state, plain.state), 0.0);
}

}  // namespace
}  // namespace gantry::gan
