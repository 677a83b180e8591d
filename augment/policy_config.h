// Reads a DiffAugment policy from a config object: what the run config's "augment" section and
// the bCR objective term share.
#pragma once

#include "augment/augment_spec.h"
#include "core/json_reader.h"

namespace gantry::augment {

// The DiffAugment transforms of the object `reader` reads, whose table declares "policy" (transform
// names, each named once), "translation_ratio" and "cutout_ratio".
AugmentPolicy read_augment_policy(JsonReader& reader);

}  // namespace gantry::augment
