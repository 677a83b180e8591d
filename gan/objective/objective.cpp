#include "gan/objective/objective.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

namespace gantry::gan {

namespace {

const char* network_name(Network n) { return n == Network::Discriminator ? "D" : "G"; }

}  // namespace

std::vector<TermPtr> objective_of(const GanSpec& spec) {
  std::set<std::pair<Network, std::string>> replaced;
  for (const TermPtr& t : spec.terms) {
    GANTRY_CHECK(t != nullptr, "loss.terms: an objective term is null");
    if (t->replaces().empty()) continue;
    GANTRY_CHECK(replaced.emplace(t->network(), t->replaces()).second, "loss.terms: expected at most one term in "
                 "the place of ", network_name(t->network()), "'s \"", t->replaces(), "\" term, found another: \"",
                 t->name(), "\"");
  }
  std::vector<TermPtr> terms;
  std::set<std::string> state_names;
  for (const TermPtr& t : spec.terms) {
    GANTRY_CHECK(!t->needs_whole_batch() || spec.micro_batches == 1, "loss.terms: \"", t->name(), "\" expected "
                 "train.micro_batches 1 (it sees the whole global batch at once), found ", spec.micro_batches);
    if (replaced.count({t->network(), t->name()})) continue;
    // Each replica holds one tensor per declared name (Note [term state]).
    for (const TermStateDeclaration& d : t->state()) {
      GANTRY_CHECK(!d.initial.empty(), "loss.terms: objective term \"", t->name(), "\" declares state \"", d.name,
                   "\" without values");
      GANTRY_CHECK(state_names.insert(d.name).second, "loss.terms: expected each term with state at most once, found ",
                   "two that declare the state \"", d.name, "\" (", t->name(), ")");
    }
    terms.push_back(t);
  }
  return terms;
}

double lazy_regularization_ratio(int64_t interval) {
  GANTRY_CHECK(interval >= 1, "lazy regularisation: expected an interval >= 1, found ", interval);
  if (interval == 1) return 1.0;  // regularised every step: not lazy, nothing to correct
  return static_cast<double>(interval) / static_cast<double>(interval + 1);
}

double lazy_regularization_ratio(const std::vector<TermPtr>& objective, Network network) {
  int64_t interval = 1;
  for (const TermPtr& t : objective)
    if (t->network() == network) interval = std::max(interval, t->interval());
  return lazy_regularization_ratio(interval);
}

}  // namespace gantry::gan
