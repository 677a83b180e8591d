// Losses and penalties by config name. Built-ins are registered on first use; plugins add more
// through register_*. A config object is {"type": NAME, ...options}; unknown types and keys are
// errors naming the JSON path.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "losses/adversarial_loss.h"
#include "losses/penalty.h"

namespace gantry::losses {

// A factory reads its options from the reader (the "type" key is already consumed).
using AdversarialLossFactory = std::function<std::unique_ptr<AdversarialLoss>(JsonReader&)>;
using PenaltyFactory = std::function<std::unique_ptr<Penalty>(JsonReader&)>;

void register_adversarial_loss(const std::string& name, AdversarialLossFactory factory);
void register_penalty(const std::string& name, PenaltyFactory factory);
std::vector<std::string> adversarial_loss_names();
std::vector<std::string> penalty_names();

// Builds from `config` (which gets its defaults written back); `path` names it in errors. The
// adversarial loss shares its object with the loss section's own keys: `declared` are the keys
// the losses read, `siblings` the section's others (NamedRegistry::build).
std::unique_ptr<AdversarialLoss> make_adversarial_loss(nlohmann::json& config, const std::string& path,
                                                      std::span<const ConfigKey> declared = {},
                                                      std::span<const ConfigKey> siblings = {});
std::unique_ptr<Penalty> make_penalty(nlohmann::json& config, const std::string& path);

}  // namespace gantry::losses
