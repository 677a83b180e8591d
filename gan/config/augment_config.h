// The "augment" section of a run config: differentiable augmentation of every image D sees
// (augment/), its probability p and ADA's adaptive rule. docs/config.md lists the keys,
// docs/augmentation.md what they do.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "augment/augment_spec.h"
#include "core/config_key.h"
#include "core/json_reader.h"

namespace gantry::gan {

// The declared keys of "augment" (core/config_key.h).
std::vector<ConfigSection> augment_config_sections();

// Validates `section` (path "augment") and writes its defaults back. An empty policy (the
// default) turns augmentation off.
augment::AugmentSpec resolve_augment_config(nlohmann::json& section);

}  // namespace gantry::gan
