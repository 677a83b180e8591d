#include "gan/term_registry.h"

#include "core/named_registry.h"

namespace gantry::gan {

namespace {

NamedRegistry<ObjectiveTermFactory>& term_registry() {
  static auto* r = new NamedRegistry<ObjectiveTermFactory>("objective term");
  return *r;
}

}  // namespace

void register_objective_term(const std::string& name, ObjectiveTermFactory factory) {
  term_registry().add(name, std::move(factory));
}

std::vector<std::string> objective_term_names() { return term_registry().names(); }

TermPtr make_objective_term(nlohmann::json& config, const std::string& path) {
  TermPtr term = term_registry().build(config, path);
  GANTRY_CHECK(term != nullptr, path, ": the objective term's factory returned nothing");
  return term;
}

}  // namespace gantry::gan
