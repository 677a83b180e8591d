#include "support/term_config.h"

#include <gtest/gtest.h>


namespace gantry::testing {

gan::TermContext non_saturating_context() {
  gan::TermContext context;
  context.adversarial_loss = losses::make_non_saturating();
  return context;
}

std::string term_config_error(nlohmann::json config, const std::string& path) {
  try {
    gan::make_objective_term(config, path, non_saturating_context());
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

void expect_term_config_error(const nlohmann::json& config, const std::string& path, const std::string& expected) {
  const std::string e = term_config_error(config, path);
  EXPECT_NE(e.find(expected), std::string::npos) << e;
}

}  // namespace gantry::testing
