// Objective terms by name (Note [objective terms]): every part of the objective comes from the
// config through here. `loss.penalties` and `loss.terms` list {"type": NAME, ...options}, each
// built by NAME's factory; the loss section's own keys name built-in terms that a config does not
// list by type: "adversarial" (loss.type and its options), "auxiliary_classification"
// (loss.auxiliary_classification_weight), "path_length" (loss.path_length) and ADA's "real_sign"
// (augment.adaptive). Plugins register more (docs/plugins.md). Each entry declares the keys its
// factory reads (core/config_key.h): unknown types and unread keys are errors naming the JSON path.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/json_reader.h"
#include "gan/spec/objective_term.h"
#include "losses/adversarial_loss.h"

namespace gantry::gan {

// What a factory knows of the objective besides its own options; the terms built before it may
// add to it (the adversarial terms give the loss, which top-k's term takes).
struct TermContext {
  std::shared_ptr<const losses::AdversarialLoss> adversarial_loss;  // set by the "adversarial" entry
  int64_t num_classes = 0;  // > 0: class-conditional data
  bool style_generator = false;  // the generator has style latents (path length defaults on)
};

// A factory reads its options from the reader (the "type" key is already consumed) and returns
// its terms: one, or one per network (the adversarial terms: D's, then G's).
using ObjectiveTermFactory = std::function<std::vector<TermPtr>(JsonReader&, TermContext&)>;
// A factory of one term, as plugins write them.
using SingleTermFactory = std::function<TermPtr(JsonReader&)>;

// A term a config lists by type, reading the declared `keys` (their defaults written back).
void register_objective_term(const std::string& name, std::span<const ConfigKey> keys, ObjectiveTermFactory factory);
void register_objective_term(const std::string& name, std::span<const ConfigKey> keys, SingleTermFactory factory);
// The same for a term without options (a factory that declares none).
void register_objective_term(const std::string& name, SingleTermFactory factory);
// The types `loss.penalties` and `loss.terms` may name.
std::vector<std::string> objective_term_names();
// Every entry's name and declared keys (docs/config.md's tables, gan::run_config_sections).
std::vector<std::pair<std::string, std::span<const ConfigKey>>> objective_term_keys();

// Builds the terms of the listed entry `config` names by its "type" (its defaults written back);
// `path` names it in errors.
std::vector<TermPtr> make_objective_terms(nlohmann::json& config, const std::string& path, TermContext& context);
// Builds the terms of the built-in entry `name` from `config`, an object of that entry's keys
// alone (its defaults written back); `path` names it in errors.
std::vector<TermPtr> make_builtin_terms(const std::string& name, nlohmann::json& config, const std::string& path,
                                        TermContext& context);
// The same from a section that holds other keys too ("loss"): the entry's keys join `reader`'s,
// whose owner finishes it once every reader of the section has read.
std::vector<TermPtr> make_builtin_terms(const std::string& name, JsonReader& reader, TermContext& context);
// One term of a listed entry (a test's or a tool's convenience): exactly one, else an error.
TermPtr make_objective_term(nlohmann::json& config, const std::string& path, TermContext context = {});

}  // namespace gantry::gan
