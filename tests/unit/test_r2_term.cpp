// The "r2" objective term by config name (gan/objective/term_registry.h): defaults written back, its
// lazy interval, the `approximate` form of R1 and R2 (Note [approximate R1 and R2]), and config
// errors that name the JSON path.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gan/objective/gradient_penalty_terms.h"
#include "gan/objective/term_registry.h"
#include "losses/penalty.h"

namespace gantry::gan {
namespace {

std::string error_of(nlohmann::json config) {
  try {
    make_objective_term(config, "loss.terms[1]");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(R2Term, BuildsFromConfigWithDefaultsWrittenBack) {
  nlohmann::json config = {{"type", "r2"}, {"gamma", 5}};
  TermPtr term = make_objective_term(config, "loss.terms[0]");
  EXPECT_EQ(term->name(), "r2_penalty");
  EXPECT_EQ(term->network(), Network::Discriminator);
  EXPECT_TRUE(term->has_loss());
  EXPECT_EQ(config["interval"], 1);
  EXPECT_EQ(config["gamma"], 5);
  EXPECT_TRUE(term->active_at(0) && term->active_at(1));

  nlohmann::json lazy = {{"type", "r2"}, {"interval", 4}};
  TermPtr every4 = make_objective_term(lazy, "loss.terms[0]");
  EXPECT_EQ(lazy["gamma"], 10.0);
  EXPECT_TRUE(every4->active_at(0) && every4->active_at(8));
  EXPECT_FALSE(every4->active_at(1) || every4->active_at(3) || every4->active_at(6));
}

TEST(R2Term, ConfigErrorsNameThePath) {
  const std::string unknown = error_of({{"type", "r2"}, {"weight", 1}});
  EXPECT_NE(unknown.find("loss.terms[1].weight: unknown key"), std::string::npos) << unknown;
  const std::string negative = error_of({{"type", "r2"}, {"gamma", -1}});
  EXPECT_NE(negative.find("loss.terms[1].gamma: expected a number >= 0"), std::string::npos) << negative;
  EXPECT_NE(negative.find("-1"), std::string::npos) << negative;
  const std::string text = error_of({{"type", "r2"}, {"gamma", "10"}});
  EXPECT_NE(text.find("loss.terms[1].gamma"), std::string::npos) << text;
  for (int interval : {0, -2}) {
    const std::string e = error_of({{"type", "r2"}, {"interval", interval}});
    EXPECT_NE(e.find("loss.terms[1].interval: expected a positive integer"), std::string::npos) << e;
  }
  const std::string fraction = error_of({{"type", "r2"}, {"interval", 1.5}});
  EXPECT_NE(fraction.find("loss.terms[1].interval"), std::string::npos) << fraction;
  // every penalty is a term that either list may name; the built-in terms the loss section's own
  // keys name are not listed by type
  EXPECT_EQ(error_of({{"type", "r1"}}), "no error");
  const std::string adversarial = error_of({{"type", "adversarial"}});
  EXPECT_NE(adversarial.find("loss.terms[1].type: unknown objective term \"adversarial\""), std::string::npos)
      << adversarial;
}

TEST(R2Term, TheApproximateFormOfR1AndR2) {
  for (const char* type : {"r1", "r2"}) {
    SCOPED_TRACE(type);
    nlohmann::json config = {{"type", type}, {"gamma", 0.1}, {"interval", 4}, {"approximate", nlohmann::json::object()}};
    TermPtr term = make_objective_term(config, "loss.terms[0]");
    EXPECT_EQ(term->name(), std::string(type) + "_penalty");  // the same component as the exact form
    EXPECT_EQ(term->interval(), 4);
    EXPECT_EQ(config["approximate"], (nlohmann::json{{"sigma", 0.01}}));  // the default written back
    nlohmann::json set = {{"type", type}, {"approximate", {{"sigma", 0.05}}}};
    make_objective_term(set, "loss.terms[0]");
    EXPECT_EQ(set["approximate"]["sigma"], 0.05);
    nlohmann::json exact = {{"type", type}};
    make_objective_term(exact, "loss.terms[0]");
    EXPECT_FALSE(exact.contains("approximate"));  // absent: the exact penalty, nothing written back

    for (double sigma : {0.0, -0.01}) {
      const std::string e = error_of({{"type", type}, {"approximate", {{"sigma", sigma}}}});
      EXPECT_NE(e.find("loss.terms[1].approximate.sigma: expected a number > 0"), std::string::npos) << e;
    }
    const std::string text = error_of({{"type", type}, {"approximate", {{"sigma", "0.01"}}}});
    EXPECT_NE(text.find("loss.terms[1].approximate.sigma"), std::string::npos) << text;
    const std::string unknown = error_of({{"type", type}, {"approximate", {{"std", 0.01}}}});
    EXPECT_NE(unknown.find("loss.terms[1].approximate.std: unknown key"), std::string::npos) << unknown;
    for (const nlohmann::json& not_object : {nlohmann::json(true), nlohmann::json(0.01)}) {
      const std::string e = error_of({{"type", type}, {"approximate", not_object}});
      EXPECT_NE(e.find("loss.terms[1].approximate"), std::string::npos) << e;
      EXPECT_NE(e.find("object"), std::string::npos) << e;
    }
  }
  // WGAN-GP has no approximate form (Note [approximate R1 and R2])
  const std::string gp = error_of({{"type", "wgan_gp"}, {"approximate", {{"sigma", 0.01}}}});
  EXPECT_NE(gp.find("loss.terms[1].approximate: unknown key"), std::string::npos) << gp;
  // made directly: sigma > 0 and finite
  for (float sigma : {0.f, -1.f, std::nanf(""), INFINITY}) {
    EXPECT_THROW(make_r1_term(1.f, 1, ApproximatePenalty{sigma}), Error) << sigma;
    EXPECT_THROW(make_r2_term(1.f, 1, ApproximatePenalty{sigma}), Error) << sigma;
  }
  try {
    make_r2_term(1.f, 1, ApproximatePenalty{-1.f});
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("r2: expected an approximate.sigma > 0, found -1"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(make_r1_term(1.f, 8, ApproximatePenalty{}));
}

TEST(R2Term, MadeDirectlyRejectsBadSettings) {
  EXPECT_THROW(make_r2_term(-0.5f), Error);
  EXPECT_THROW(make_r2_term(1.f, 0), Error);
  // a schedule is checked at its lowest value, as the penalties' are
  EXPECT_THROW(make_r2_term(nn::ValueSchedule(nn::Ramp{0.1, -0.01, 1.0})), Error);
  EXPECT_THROW(gan::make_r1_term(nn::ValueSchedule(nn::Ramp{0.1, 0.1, 1.0, nn::RampShape::Cosine, 0.5, -1.0})), Error);
  EXPECT_THROW(gan::make_wgan_gp_term(nn::ValueSchedule(-1.0)), Error);
  EXPECT_NO_THROW(make_r2_term(nn::ValueSchedule(nn::Ramp{0.1, 0.0, 1.0})));
}

}  // namespace
}  // namespace gantry::gan
