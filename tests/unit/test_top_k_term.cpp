// The "top_k" objective term (gan/objective/top_k_term.h): k's annealing as a function of the global step,
// the choice of the k highest logits (ties, NaN), its config with defaults written back and errors
// naming the JSON path, and that it replaces G's adversarial term in the objective.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "gan/objective/adversarial_term.h"
#include "gan/objective/objective.h"
#include "gan/objective/term_registry.h"
#include "gan/objective/top_k_term.h"
#include "losses/adversarial_loss.h"
#include "support/term_config.h"

namespace gantry::gan {
namespace {

void expect_error(const nlohmann::json& config, const std::string& expected) {
  testing::expect_term_config_error(config, "loss.terms[0]", expected);
}

TEST(TopKTerm, KAnnealsByEpochOfTheGlobalStepToItsFloor) {
  TopKSettings s;  // gamma 0.99, nu 0.5, 1000 steps an epoch
  EXPECT_EQ(top_k_count(s, 64, 0), 64);
  EXPECT_EQ(top_k_count(s, 64, 999), 64);
  EXPECT_EQ(top_k_count(s, 64, 1000), 63);                                          // floor(0.99 * 64)
  EXPECT_EQ(top_k_count(s, 64, 10'000), static_cast<int64_t>(std::floor(std::pow(0.99, 10) * 64)));  // 57
  EXPECT_EQ(top_k_count(s, 64, 1'000'000), 32);                                     // nu * 64
  s.gamma = 0.5;
  s.nu = 0.25;
  s.steps_per_epoch = 2;
  EXPECT_EQ(top_k_count(s, 8, 0), 8);
  EXPECT_EQ(top_k_count(s, 8, 1), 8);
  EXPECT_EQ(top_k_count(s, 8, 2), 4);
  EXPECT_EQ(top_k_count(s, 8, 5), 2);
  EXPECT_EQ(top_k_count(s, 8, 100), 2);
  EXPECT_EQ(top_k_count(s, 3, 100), 1);  // floor(0.75) = 0: at least one
}

TEST(TopKTerm, RowsOfTheKHighestTiesToTheLowerRowNanLowest) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> logits = {0.5f, 2.f, -1.f, 2.f, nan, 0.7f, 3.f, 0.5f};
  EXPECT_EQ(top_k_rows(logits, 1), (std::vector<int64_t>{6}));
  EXPECT_EQ(top_k_rows(logits, 2), (std::vector<int64_t>{1, 6}));  // 2 at rows 1 and 3: the lower
  EXPECT_EQ(top_k_rows(logits, 3), (std::vector<int64_t>{1, 3, 6}));
  EXPECT_EQ(top_k_rows(logits, 5), (std::vector<int64_t>{0, 1, 3, 5, 6}));
  EXPECT_EQ(top_k_rows(logits, 7), (std::vector<int64_t>{0, 1, 2, 3, 5, 6, 7}));
  EXPECT_EQ(top_k_rows(logits, 8).size(), 8u);
}

TEST(TopKTerm, BuildsFromConfigWithDefaultsWrittenBack) {
  nlohmann::json config = {{"type", "top_k"}};
  TermPtr term = make_objective_term(config, "loss.terms[0]", testing::non_saturating_context());
  EXPECT_EQ(term->name(), "top_k_adversarial");
  EXPECT_EQ(term->network(), Network::Generator);
  EXPECT_TRUE(term->joins_collectives());
  EXPECT_EQ(term->replaces(), "adversarial");
  EXPECT_TRUE(term->needs_whole_batch());
  EXPECT_EQ(config["gamma"], 0.99);
  EXPECT_EQ(config["nu"], 0.5);
  EXPECT_EQ(config["steps_per_epoch"], 1000);
  nlohmann::json given = {{"type", "top_k"}, {"gamma", 1}, {"nu", 0.25}, {"steps_per_epoch", 50}};
  make_objective_term(given, "loss.terms[0]", testing::non_saturating_context());
  EXPECT_EQ(given["gamma"], 1);
  EXPECT_EQ(given["steps_per_epoch"], 50);
}

TEST(TopKTerm, ConfigErrorsNameThePath) {
  expect_error({{"type", "top_k"}, {"k", 4}}, "loss.terms[0].k: unknown key");
  expect_error({{"type", "top_k"}, {"gamma", 1.5}}, "loss.terms[0].gamma: expected a number in (0, 1]");
  expect_error({{"type", "top_k"}, {"gamma", 0}}, "loss.terms[0].gamma: expected a number in (0, 1]");
  expect_error({{"type", "top_k"}, {"nu", 0}}, "loss.terms[0].nu: expected a number in (0, 1]");
  expect_error({{"type", "top_k"}, {"nu", "half"}}, "loss.terms[0].nu");
  expect_error({{"type", "top_k"}, {"steps_per_epoch", 0}}, "loss.terms[0].steps_per_epoch: expected a positive integer");
  const std::shared_ptr<const losses::AdversarialLoss> loss = losses::make_non_saturating();
  EXPECT_THROW(make_top_k_term(TopKSettings{0.0, 0.5, 1}, loss), Error);
  EXPECT_THROW(make_top_k_term(TopKSettings{0.9, 1.5, 1}, loss), Error);
  EXPECT_THROW(make_top_k_term(TopKSettings{0.9, 0.5, 0}, loss), Error);
  EXPECT_THROW(make_top_k_term(TopKSettings{}, nullptr), Error);
}

TEST(TopKTerm, ReplacesGsAdversarialTermInTheObjective) {
  GanSpec spec;
  const std::shared_ptr<const losses::AdversarialLoss> loss = losses::make_non_saturating();
  spec.terms = make_adversarial_terms(loss);
  auto g_names = [&] {
    std::vector<std::string> names;
    for (const TermPtr& t : objective_of(spec))
      if (t->network() == Network::Generator) names.push_back(t->name());
    return names;
  };
  EXPECT_EQ(g_names(), (std::vector<std::string>{"adversarial"}));
  spec.terms.push_back(make_top_k_term(TopKSettings{}, loss));
  EXPECT_EQ(g_names(), (std::vector<std::string>{"top_k_adversarial"}));
  spec.micro_batches = 2;  // it chooses among the whole global batch
  EXPECT_THROW(objective_of(spec), Error);
  spec.micro_batches = 1;
  spec.terms.push_back(make_top_k_term(TopKSettings{}, loss));
  EXPECT_THROW(objective_of(spec), Error);  // two of them
  spec.terms.pop_back();
  try {
    make_top_k_term(TopKSettings{}, losses::make_relativistic_pairing());  // G's loss needs the real logits
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("relativistic_pairing"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gantry::gan
