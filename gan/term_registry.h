// Objective terms by config name (Note [objective terms]): `loss.terms` lists
// {"type": NAME, ...options}, each built by NAME's factory; plugins register more
// (docs/plugins.md). Unknown types and unread keys are errors naming the JSON path.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "gan/objective_term.h"

namespace gantry::gan {

// A factory reads its options from the reader (the "type" key is already consumed).
using ObjectiveTermFactory = std::function<TermPtr(JsonReader&)>;

void register_objective_term(const std::string& name, ObjectiveTermFactory factory);
std::vector<std::string> objective_term_names();
// Builds from `config` (which gets its defaults written back); `path` names it in errors.
TermPtr make_objective_term(nlohmann::json& config, const std::string& path);

}  // namespace gantry::gan
