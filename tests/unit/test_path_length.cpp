// Path length regularisation's arithmetic (gan/objective/path_length.h), its term and its config: the
// decaying mean, the penalty, the batch, the lazy-regularisation correction (lr x c, betas^c) from
// the terms' intervals and the keys
// loss.path_length / loss.lazy_regularization_correction with their stylegan2 defaults.
#include <gtest/gtest.h>

#include <cmath>

#include "core/ops/ops.h"
#include "gan/config/model_config.h"
#include "gan/objective/gradient_penalty_terms.h"
#include "gan/objective/objective.h"
#include "gan/objective/path_length.h"
#include "gan/objective/path_length_term.h"
#include "nn/adam.h"

namespace gantry::gan {
namespace {

TEST(PathLength, MeanMovesByDecayTowardsTheBatchMean) {
  EXPECT_FLOAT_EQ(updated_path_length_mean(0.f, 2.f, 0.01), 0.02f);  // torch.lerp(0, 2, 0.01)
  EXPECT_FLOAT_EQ(updated_path_length_mean(1.f, 3.f, 0.5), 2.f);
  EXPECT_FLOAT_EQ(updated_path_length_mean(1.f, 3.f, 0.0), 1.f);
}

TEST(PathLength, PenaltyIsTheScaledSumOfSquaredDeviations) {
  PathLengthSettings s;
  s.weight = 2.f;
  s.interval = 4;
  Tensor lengths = ops::from_vector(std::vector<float>{1.f, 2.f}, Shape{2});
  // (0.25 + 0.25) * weight 2 * interval 4 / denominator 2
  EXPECT_FLOAT_EQ(path_length_penalty(lengths, 1.5f, s, 2.f).item(), 2.f);
  // its term is active on the steps the interval divides (Note [lazy terms])
  const TermPtr term = make_path_length_term(s);
  EXPECT_EQ(term->interval(), 4);
  EXPECT_TRUE(term->active_at(0));
  EXPECT_FALSE(term->active_at(3));
  EXPECT_TRUE(term->active_at(8));
  EXPECT_EQ(term->state().at(0).name, kPathLengthMean);
  s.weight = 0.f;  // off: no term
  EXPECT_THROW(make_path_length_term(s), Error);
}

TEST(PathLength, BatchIsTheGlobalBatchShrunk) {
  PathLengthSettings s;
  EXPECT_EQ(path_length_batch(16, s), 8);
  EXPECT_EQ(path_length_batch(1, s), 1);
  s.batch_shrink = 4;
  EXPECT_EQ(path_length_batch(18, s), 4);
}

TEST(PathLength, LazyRegularisationRatio) {
  EXPECT_DOUBLE_EQ(lazy_regularization_ratio(4), 0.8);
  EXPECT_DOUBLE_EQ(lazy_regularization_ratio(16), 16.0 / 17.0);
  EXPECT_DOUBLE_EQ(lazy_regularization_ratio(1), 1.0);  // not lazy
  EXPECT_THROW(lazy_regularization_ratio(0), Error);
  // of an objective: each network's largest interval among its terms
  PathLengthSettings pl;
  pl.weight = 2.f;
  pl.interval = 4;
  const std::vector<TermPtr> objective = {make_r1_term(1.f, 16), make_r2_term(1.f, 8), make_path_length_term(pl)};
  EXPECT_DOUBLE_EQ(lazy_regularization_ratio(objective, Network::Discriminator), 16.0 / 17.0);
  EXPECT_DOUBLE_EQ(lazy_regularization_ratio(objective, Network::Generator), 0.8);
}

// The term of a network, by name (null when it has none).
TermPtr term_named(const std::vector<TermPtr>& terms, Network network, const std::string& name) {
  for (const TermPtr& t : terms)
    if (t->network() == network && t->name() == name) return t;
  return nullptr;
}

TermContext style_context(bool style_generator) {
  TermContext context;
  context.style_generator = style_generator;
  return context;
}

TEST(PathLength, StyleGeneratorConfigsDefaultToStyleGan2sSettings) {
  nlohmann::json loss = {{"penalties", {{{"type", "r1"}, {"gamma", 0.1}, {"interval", 16}}}}};
  LossConfig c = resolve_loss_config(loss, style_context(true), "non_saturating");
  const TermPtr path_length = term_named(c.terms, Network::Generator, "path_length");
  ASSERT_TRUE(path_length);
  EXPECT_EQ(path_length->interval(), 4);
  EXPECT_EQ(loss["path_length"]["weight"], 2.0);  // written back
  EXPECT_EQ(loss["path_length"]["batch_shrink"], 2);
  EXPECT_EQ(loss["path_length"]["decay"], 0.01);
  EXPECT_EQ(loss["path_length"]["interval"], 4);
  EXPECT_EQ(loss["lazy_regularization_correction"], true);
  EXPECT_DOUBLE_EQ(c.generator_lazy_ratio, 0.8);
  EXPECT_DOUBLE_EQ(c.discriminator_lazy_ratio, 16.0 / 17.0);

  nlohmann::json off = {{"lazy_regularization_correction", false}, {"path_length", {{"weight", 0}}}};
  LossConfig d = resolve_loss_config(off, style_context(true), "non_saturating");
  EXPECT_FALSE(term_named(d.terms, Network::Generator, "path_length"));
  EXPECT_DOUBLE_EQ(d.generator_lazy_ratio, 1.0);
  EXPECT_DOUBLE_EQ(d.discriminator_lazy_ratio, 1.0);

  nlohmann::json dcgan = nlohmann::json::object();
  LossConfig e = resolve_loss_config(dcgan, style_context(false), "non_saturating");
  EXPECT_FALSE(term_named(e.terms, Network::Generator, "path_length"));
  EXPECT_FALSE(dcgan.contains("path_length"));  // other generators' configs are unchanged
  EXPECT_FALSE(dcgan.contains("lazy_regularization_correction"));
}

TEST(PathLength, ConfigErrorsNameTheKey) {
  auto error_of = [](nlohmann::json loss) {
    try {
      resolve_loss_config(loss, style_context(true), "non_saturating");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error_of({{"path_length", {{"weight", -1}}}}).find("loss.path_length.weight"), std::string::npos);
  EXPECT_NE(error_of({{"path_length", {{"interval", 0}}}}).find("loss.path_length.interval"), std::string::npos);
  EXPECT_NE(error_of({{"path_length", {{"wieght", 1}}}}).find("wieght"), std::string::npos);
  EXPECT_NE(error_of({{"lazy_regularization_correction", 1}}).find("lazy_regularization_correction"),
            std::string::npos);
}

TEST(PathLength, CorrectionScalesLearningRateAndRaisesBetas) {
  nlohmann::json section = {{"type", "adam"}, {"lr", 0.0025}, {"beta1", 0.5}, {"beta2", 0.99}};
  OptimizerConfig c = resolve_optimizer_config(section, "optimizers.generator", 0.8);
  Tensor p = ops::zeros({2});
  p.set_requires_grad(true);
  auto opt = c.make({p});
  auto& adam = dynamic_cast<nn::Adam&>(*opt);
  EXPECT_DOUBLE_EQ(adam.options().lr, 0.0025 * 0.8);
  EXPECT_DOUBLE_EQ(adam.options().beta1, std::pow(0.5, 0.8));
  EXPECT_DOUBLE_EQ(adam.options().beta2, std::pow(0.99, 0.8));
  EXPECT_EQ(section["lr"], 0.0025);  // the config keeps what the user wrote
}

}  // namespace
}  // namespace gantry::gan
