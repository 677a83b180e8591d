// What a loss needs besides logits: the denominator that turns per-replica sums into the global
// mean, and where its randomness comes from.
#pragma once

#include <cstdint>

#include "core/ops/ops.h"

namespace gantry::losses {

struct LossContext {
  // Global batch size. Each replica sums its per-example losses and divides by this, so the
  // all-reduced (summed) gradients equal those of one device on the whole batch.
  float denominator = 1.f;
  // Penalty randomness (interpolation weights) is element `first_example + i` of this stream, i.e.
  // keyed by the global example index (Note [random streams] in base/philox.h).
  RngKey key;
  uint64_t first_example = 0;
  int64_t step = 0;  // global step (lazy regularisation)
  // The images of the global steps before this one (step x global batch): the clock of scheduled
  // weights (Note [value schedules] in nn/value_schedule.h).
  int64_t images_seen = 0;
};

// sum(per_example) / ctx.denominator
inline Tensor reduce_examples(const Tensor& per_example, const LossContext& ctx) {
  return ops::mul(ops::sum(per_example), 1.f / ctx.denominator);
}

}  // namespace gantry::losses
