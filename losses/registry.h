// Adversarial losses by config name (`loss.type`; D's regularisers are objective terms:
// gan/objective/term_registry.h). Built-ins are registered on first use; plugins add more through
// register_adversarial_loss. A config object is {"type": NAME, ...options}; unknown types and keys
// are errors naming the JSON path.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "losses/adversarial_loss.h"

namespace gantry::losses {

// A factory reads its options from the reader (the "type" key is already consumed).
using AdversarialLossFactory = std::function<std::unique_ptr<AdversarialLoss>(JsonReader&)>;

// `keys`: the options the factory reads besides those of adversarial_loss_keys() (declared, so
// defaults and checks live in the declarations; a plugin may read with JsonReader's getters instead).
void register_adversarial_loss(const std::string& name, AdversarialLossFactory factory,
                               std::span<const ConfigKey> keys = {});
std::vector<std::string> adversarial_loss_names();
// The keys every adversarial loss's object may hold: "type" and the built-ins' "real_label".
std::span<const ConfigKey> adversarial_loss_keys();

// Builds the loss `reader`'s "type" names, reading its options from `reader` (declared with
// adversarial_loss_keys()); the caller finishes the reader.
std::unique_ptr<AdversarialLoss> make_adversarial_loss(JsonReader& reader);
// The same from `config` alone (its defaults written back); `path` names it in errors.
std::unique_ptr<AdversarialLoss> make_adversarial_loss(nlohmann::json& config, const std::string& path);

}  // namespace gantry::losses
