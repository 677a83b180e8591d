// The "zcr" and "zcr_generator" objective terms by config name (gan/objective/term_registry.h): defaults
// written back and config errors that name the JSON path.
#include <gtest/gtest.h>

#include <string>

#include "gan/objective/term_registry.h"
#include "gan/objective/zcr_term.h"
#include "support/term_config.h"

namespace gantry::gan {
namespace {

void expect_error(const nlohmann::json& config, const std::string& expected) {
  testing::expect_term_config_error(config, "loss.terms[3]", expected);
}

TEST(ZcrTerm, BuildsBothFromConfigWithDefaultsWrittenBack) {
  nlohmann::json d = {{"type", "zcr"}};
  TermPtr dis = make_objective_term(d, "loss.terms[0]");
  EXPECT_EQ(dis->name(), "zcr_penalty");
  EXPECT_EQ(dis->network(), Network::Discriminator);
  EXPECT_EQ(d["lambda_dis"], 5.0);
  EXPECT_EQ(d["sigma_noise"], 0.05);
  nlohmann::json g = {{"type", "zcr_generator"}, {"sigma_noise", 0.1}};
  TermPtr gen = make_objective_term(g, "loss.terms[1]");
  EXPECT_EQ(gen->name(), "zcr_generator");
  EXPECT_EQ(gen->network(), Network::Generator);
  EXPECT_EQ(g["lambda_gen"], 0.5);
  EXPECT_EQ(g["sigma_noise"], 0.1);
  for (const TermPtr& t : {dis, gen}) {
    EXPECT_TRUE(t->has_loss());
    EXPECT_FALSE(t->joins_collectives());
    EXPECT_TRUE(t->active_at(0) && t->active_at(5));
  }
}

TEST(ZcrTerm, ConfigErrorsNameThePath) {
  expect_error({{"type", "zcr"}, {"lambda_gen", 1}}, "loss.terms[3].lambda_gen: unknown key");
  expect_error({{"type", "zcr_generator"}, {"lambda_dis", 1}}, "loss.terms[3].lambda_dis: unknown key");
  expect_error({{"type", "zcr"}, {"lambda_dis", -1}}, "loss.terms[3].lambda_dis: expected a number >= 0");
  expect_error({{"type", "zcr_generator"}, {"lambda_gen", "1"}}, "loss.terms[3].lambda_gen");
  expect_error({{"type", "zcr"}, {"sigma_noise", 0}}, "loss.terms[3].sigma_noise: expected a number > 0");
  expect_error({{"type", "zcr_generator"}, {"sigma_noise", -0.1}}, "loss.terms[3].sigma_noise: expected a number > 0");
  EXPECT_THROW(make_zcr_term(-1.f, 0.05f), Error);
  EXPECT_THROW(make_zcr_generator_term(1.f, 0.f), Error);
}

}  // namespace
}  // namespace gantry::gan
