// The "bcr" objective term by config name (gan/objective/term_registry.h): defaults written back, its own
// DiffAugment policy read as the augment section reads one, and config errors that name the
// JSON path.
#include <gtest/gtest.h>

#include <string>

#include "gan/objective/bcr_term.h"
#include "gan/objective/term_registry.h"
#include "support/term_config.h"

namespace gantry::gan {
namespace {

void expect_error(const nlohmann::json& config, const std::string& expected) {
  testing::expect_term_config_error(config, "loss.terms[2]", expected);
}

TEST(BcrTerm, BuildsFromConfigWithDefaultsWrittenBack) {
  nlohmann::json config = {{"type", "bcr"}};
  TermPtr term = make_objective_term(config, "loss.terms[0]");
  EXPECT_EQ(term->name(), "bcr_penalty");
  EXPECT_EQ(term->network(), Network::Discriminator);
  EXPECT_TRUE(term->has_loss());
  EXPECT_FALSE(term->joins_collectives());
  EXPECT_TRUE(term->active_at(0) && term->active_at(7));
  EXPECT_EQ(config["lambda_real"], 10.0);
  EXPECT_EQ(config["lambda_fake"], 10.0);
  EXPECT_EQ(config["policy"], nlohmann::json::array({"translation"}));
  EXPECT_EQ(config["translation_ratio"], 0.125);
  EXPECT_EQ(config["cutout_ratio"], 0.5);

  nlohmann::json given = {{"type", "bcr"}, {"lambda_real", 2}, {"lambda_fake", 0}, {"policy", {"translation", "cutout"}},
                          {"cutout_ratio", 0.25}};
  make_objective_term(given, "loss.terms[0]");
  EXPECT_EQ(given["lambda_real"], 2);
  EXPECT_EQ(given["lambda_fake"], 0);
  EXPECT_EQ(given["policy"], nlohmann::json::array({"translation", "cutout"}));
  EXPECT_EQ(given["cutout_ratio"], 0.25);
}

TEST(BcrTerm, ConfigErrorsNameThePath) {
  expect_error({{"type", "bcr"}, {"lambda", 1}}, "loss.terms[2].lambda: unknown key");
  expect_error({{"type", "bcr"}, {"lambda_real", -1}}, "loss.terms[2].lambda_real: expected a number >= 0");
  expect_error({{"type", "bcr"}, {"lambda_fake", "10"}}, "loss.terms[2].lambda_fake");
  expect_error({{"type", "bcr"}, {"policy", {"translation", "flip"}}},
               "loss.terms[2].policy[1]: expected one of color, brightness");
  expect_error({{"type", "bcr"}, {"policy", {"cutout", "cutout"}}}, "loss.terms[2].policy[1]: \"cutout\" repeats");
  expect_error({{"type", "bcr"}, {"policy", "translation"}}, "loss.terms[2].policy: expected an array");
  expect_error({{"type", "bcr"}, {"policy", {3}}}, "loss.terms[2].policy[0]: expected a transform name");
  expect_error({{"type", "bcr"}, {"policy", nlohmann::json::array()}},
               "loss.terms[2].policy: expected a non-empty list of transforms");
  expect_error({{"type", "bcr"}, {"translation_ratio", 2}}, "loss.terms[2].translation_ratio");
}

TEST(BcrTerm, MadeDirectlyRejectsBadSettings) {
  augment::AugmentPolicy translation;
  translation.translation = true;
  EXPECT_THROW(make_bcr_term(-1.f, 1.f, translation), Error);
  EXPECT_THROW(make_bcr_term(1.f, -1.f, translation), Error);
  EXPECT_THROW(make_bcr_term(1.f, 1.f, augment::AugmentPolicy{}), Error);
  EXPECT_NO_THROW(make_bcr_term(0.f, 1.f, translation));
}

}  // namespace
}  // namespace gantry::gan
