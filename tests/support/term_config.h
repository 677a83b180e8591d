// Config errors of objective terms by name (gan/objective/term_registry.h), for the terms' unit tests.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "gan/objective/term_registry.h"

namespace gantry::testing {

// What a term's factory knows in a run with the non-saturating loss and no labels.
gan::TermContext non_saturating_context();

// The error message make_objective_term throws for `config` at `path`, or "no error".
std::string term_config_error(nlohmann::json config, const std::string& path);
// Expects that error to contain `expected` (a failure of the calling test otherwise).
void expect_term_config_error(const nlohmann::json& config, const std::string& path, const std::string& expected);

}  // namespace gantry::testing
