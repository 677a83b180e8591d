// The "augment" section of a run config: differentiable augmentation of every image D sees
// (augment/), its probability p and ADA's adaptive rule. docs/config.md lists the keys,
// docs/augmentation.md what they do.
#pragma once

#include <nlohmann/json.hpp>

#include "augment/augment_spec.h"
#include "core/json_reader.h"

namespace gantry::gan {

// Validates `section` (path "augment") and writes its defaults back. An empty policy (the
// default) turns augmentation off.
augment::AugmentSpec resolve_augment_config(nlohmann::json& section);

// The DiffAugment transforms of the object `reader` reads: "policy" (transform names, each named
// once; `default_policy` is written back when missing), "translation_ratio" and "cutout_ratio".
// The augment section reads its policy with it, and so does the bCR term (gan/bcr_term.h).
augment::AugmentPolicy read_augment_policy(JsonReader& reader,
                                           const nlohmann::json& default_policy = nlohmann::json::array());

}  // namespace gantry::gan
