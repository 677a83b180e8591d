// The augmentation an AugmentSpec asks for: DiffAugment's policy (diff_augment.h) or ADA's
// pipeline (ada_pipeline.h), each example keyed by its global index.
#pragma once

#include <cstdint>

#include "augment/augment_spec.h"
#include "core/ops/ops.h"

namespace gantry::augment {

// x itself when the spec is off or p is 0.
Tensor augment(const Tensor& x, const AugmentSpec& spec, double p, RngKey key, uint64_t first_example);

}  // namespace gantry::augment
